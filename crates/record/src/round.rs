//! Where in the reflective loop something was made.

use serde::{Deserialize, Serialize};

/// Which round of the reflective loop, and which execution pass inside it (1 = the round's
/// plan; 2+ = recovery passes after failed tasks), produced something.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct RoundTag {
    pub round: u32,
    pub pass: u32,
}
