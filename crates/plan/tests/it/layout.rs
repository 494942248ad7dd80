//! Tasks named by id: lists for people and the waves' JSON.

use planwave_plan::ValidatedPlan;

use crate::plan;

fn diamond() -> ValidatedPlan {
    match ValidatedPlan::new(plan(&[(1, &[]), (2, &[1]), (3, &[1]), (4, &[2, 3])])) {
        Ok(p) => p,
        Err(e) => panic!("valid plan refused: {e:?}"),
    }
}

#[test]
fn ids_follow_the_indices_given() {
    let p = diamond();
    assert_eq!(p.joined_ids(p.critical_path(), " -> "), "1 -> 2 -> 4");
    assert_eq!(p.joined_ids(p.deps(3), ", "), "2, 3");
    assert_eq!(p.joined_ids(&[], ", "), "");
    let ids: Vec<String> = p.ids(&[3, 0]).iter().map(|id| id.to_string()).collect();
    assert_eq!(ids, ["4", "1"]);
}

#[test]
fn the_layout_serializes_with_the_critical_path_first() {
    let p = diamond();
    let json = serde_json::to_string(&p.layout()).unwrap_or_default();
    assert_eq!(json, r#"{"critical_path":[1,2,4],"waves":[[1],[2,3],[4]]}"#);
}
