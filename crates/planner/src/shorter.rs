//! An answer cut by the output cap (`finish_reason: length`) is its own problem: it is
//! reported as cut by the limit (not as the broken JSON it left), and the next attempt asks
//! again for a shorter answer instead of sending the cut one back (which made the prompt
//! longer and, on a small context, overflowed it).

use planwave_plan::Lang;

/// The problem recorded for an answer cut after `tokens` output tokens.
pub fn cut_problem(lang: Lang, tokens: u64) -> String {
    match lang {
        Lang::Zh => format!("回答在输出上限（{tokens} 个 token）处被截断，没有写完"),
        Lang::En => {
            format!("the answer was cut by the output limit ({tokens} tokens) before it ended")
        }
    }
}

/// The follow-up after a cut plan: the same question again, for fewer and shorter tasks.
pub fn shorter_plan(lang: Lang, min_tasks: usize, tokens: u64) -> String {
    match lang {
        Lang::Zh => format!(
            "你上一次的计划在输出上限（{tokens} 个 token）处被截断。请重新写出完整的计划，并且更短：只写 {min_tasks} 个任务，每个描述一句话，提示各一两项，确保在上限之内写完整个 JSON。"
        ),
        Lang::En => format!(
            "Your previous plan was cut off at the output limit ({tokens} tokens). Write the whole plan again, shorter: only {min_tasks} tasks, a one-sentence description each, one or two hints each, so that the whole JSON ends well within the limit."
        ),
    }
}

/// The follow-up after any other cut answer.
pub fn shorter_answer(lang: Lang, tokens: u64) -> String {
    match lang {
        Lang::Zh => format!(
            "你上一次的回答在输出上限（{tokens} 个 token）处被截断。请重新回答，更简短：条目更少、文字更短，确保在上限之内写完整个 JSON。"
        ),
        Lang::En => format!(
            "Your previous answer was cut off at the output limit ({tokens} tokens). Answer again, shorter: fewer items and shorter texts, so that the whole JSON ends well within the limit."
        ),
    }
}
