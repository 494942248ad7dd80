//! Prompts laid out for providers' prefix caches: within a batch of one template, the
//! prompts of different jobs share their instructions byte for byte, and what varies (the
//! job's topic and goal, the task, its prerequisites) comes after.

use crate::set::{PriorSection, PromptSet, TaskText};
use planwave_plan::{Lang, ValidatedPlan, parse_plan_str};

use super::*;

/// Job `company` of a template batch: the Tesla example plan with its company replaced.
fn job(company: &str, lang: Lang) -> ValidatedPlan {
    let text = include_str!("../../../../examples/tesla.json").replace("特斯拉", company);
    ValidatedPlan::new(parse_plan_str(&text).expect("parse"))
        .expect("valid")
        .with_lang(lang)
}

fn prompt_text(m: &[planwave_llm::ChatMessage]) -> String {
    m.iter()
        .map(|m| m.content.as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

fn common_prefix(a: &str, b: &str) -> usize {
    a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count()
}

#[test]
fn subagent_prompts_of_two_jobs_share_the_instructions_byte_for_byte() {
    let t = Templates::builtin();
    for (lang, background) in [(Lang::En, "## Background"), (Lang::Zh, "## 研究背景")] {
        let (a, b) = (job("比亚迪", lang), job("蔚来汽车", lang));
        let prior = [PriorSection {
            index: 0,
            text: "## Overview\n\nbody".into(),
        }];
        let pa = prompt_text(&t.subagent(&a, 3, &TaskText::of(a.task(3)), &prior));
        let pb = prompt_text(&t.subagent(&b, 3, &TaskText::of(b.task(3)), &prior));
        assert_ne!(pa, pb, "the jobs differ");
        let instructions = pa.find(background).expect("background section");
        assert_eq!(&pa[..instructions], &pb[..instructions], "{lang:?}");
        // The whole instructions block, output rules included, is in the shared prefix.
        assert!(common_prefix(&pa, &pb) >= instructions);
        // So it is under the JSON tool protocol, whose output rule differs.
        let json = |p: &ValidatedPlan| {
            let own = TaskText {
                form: crate::set::AnswerForm::JsonProtocol,
                ..TaskText::of(p.task(3))
            };
            prompt_text(&t.subagent(p, 3, &own, &prior))
        };
        let (ja, jb) = (json(&a), json(&b));
        let json_instructions = ja.find(background).expect("background section");
        assert_ne!(&ja[..json_instructions], &pa[..instructions], "{lang:?}");
        assert!(common_prefix(&ja, &jb) >= json_instructions, "{lang:?}");
        // Tasks of one job share it too, and more: the run's background.
        let other_task = prompt_text(&t.subagent(&a, 0, &TaskText::of(a.task(0)), &[]));
        let task_line = pa.find(&format!("{}: ", a.id(3))).expect("task line");
        assert!(
            common_prefix(&pa, &other_task) >= task_line.min(instructions),
            "{lang:?}"
        );
    }
}

#[test]
fn planner_prompts_of_two_goals_share_all_but_the_goal() {
    let t = Templates::builtin();
    for lang in [Lang::En, Lang::Zh] {
        let render = |goal| {
            let vars = PlannerVars {
                goal,
                tools: &[],
                schema: "{\"title\": \"ResearchPlan\", \"type\": \"object\"}",
                min_tasks: 4,
                max_tasks: 7,
                reflection: None,
                meta: Vec::new(),
                steps: false,
                process_spec: None,
            };
            prompt_text(&t.planner(lang, &vars).expect("render"))
        };
        let (a, b) = (
            render("Analyse BYD in depth"),
            render("Analyse NIO in depth"),
        );
        let shared = common_prefix(&a, &b);
        // Everything up to the goal is shared: over 90 % of the prompt.
        assert!(a[shared..].starts_with("BYD"), "{lang:?}: {}", &a[shared..]);
        assert!(
            shared * 10 > a.len() * 9,
            "{lang:?}: {shared} of {}",
            a.len()
        );
    }
}

#[test]
fn integrator_prompts_of_two_jobs_share_the_instructions() {
    let t = Templates::builtin();
    for (lang, marker) in [(Lang::En, "Report: "), (Lang::Zh, "报告标题：")] {
        let (a, b) = (job("比亚迪", lang), job("蔚来汽车", lang));
        let pa = prompt_text(&t.integrator(&a, &[]));
        let pb = prompt_text(&t.integrator(&b, &[]));
        let instructions = pa.find(marker).expect("title line");
        assert!(common_prefix(&pa, &pb) >= instructions, "{lang:?}");
    }
}
