//! Prompts the engine sends, behind a trait so template sets (files users can override) can
//! replace the built-in wording without touching the actors.

use planwave_llm::{ChatMessage, RequestContext, SectionRef};
use planwave_plan::{Lang, ValidatedPlan};

/// A prerequisite's section as handed to a subagent.
#[derive(Clone, Debug)]
pub struct PriorSection<'a> {
    pub index: usize,
    pub text: &'a str,
}

/// One finished task as handed to the integrator.
#[derive(Clone, Debug)]
pub struct SectionSummary<'a> {
    pub index: usize,
    pub status: &'a str,
    pub text: Option<&'a str>,
}

pub trait PromptSet: Send + Sync {
    /// Messages for the subagent writing task `index`, given its prerequisites' sections.
    fn subagent(
        &self,
        plan: &ValidatedPlan,
        index: usize,
        prior: &[PriorSection<'_>],
    ) -> Vec<ChatMessage>;

    /// Messages asking for the executive summary over all sections.
    fn integrator(&self, plan: &ValidatedPlan, sections: &[SectionSummary<'_>])
    -> Vec<ChatMessage>;
}

/// The structured description of a subagent request (see [`RequestContext`]).
pub fn subagent_context(
    plan: &ValidatedPlan,
    index: usize,
    prior: &[PriorSection<'_>],
) -> RequestContext {
    let task = plan.task(index);
    RequestContext {
        lang: plan.lang(),
        topic: plan.spec().topic.clone(),
        objectives: plan.spec().objectives.clone(),
        task_id: Some(task.id.to_string()),
        task_title: task.title().to_owned(),
        key_questions: task.hints.key_questions.clone(),
        data_needs: task.hints.data_needs.clone(),
        sections: prior
            .iter()
            .map(|p| SectionRef {
                id: plan.id(p.index).to_string(),
                title: plan.task(p.index).title().to_owned(),
                status: "completed".into(),
            })
            .collect(),
        ..Default::default()
    }
}

/// The structured description of the integrator's summary request.
pub fn integrator_context(plan: &ValidatedPlan, sections: &[SectionSummary<'_>]) -> RequestContext {
    RequestContext {
        lang: plan.lang(),
        topic: plan.spec().topic.clone(),
        objectives: plan.spec().objectives.clone(),
        sections: sections
            .iter()
            .map(|s| SectionRef {
                id: plan.id(s.index).to_string(),
                title: plan.task(s.index).title().to_owned(),
                status: s.status.to_owned(),
            })
            .collect(),
        ..Default::default()
    }
}

/// Seed 002's subagent template, in the plan's language, compiled in.
#[derive(Debug, Default, Clone, Copy)]
pub struct BuiltinPrompts;

fn list(items: &[String], lang: Lang) -> String {
    if items.is_empty() {
        return match lang {
            Lang::Zh => "（无）".into(),
            Lang::En => "(none)".into(),
        };
    }
    items.join(if lang == Lang::Zh { "、" } else { ", " })
}

impl PromptSet for BuiltinPrompts {
    fn subagent(
        &self,
        plan: &ValidatedPlan,
        index: usize,
        prior: &[PriorSection<'_>],
    ) -> Vec<ChatMessage> {
        let spec = plan.spec();
        let task = plan.task(index);
        let lang = plan.lang();
        let rt = spec.research_type.as_deref().unwrap_or("-");
        let mut p = String::with_capacity(1024);
        match lang {
            Lang::Zh => {
                p.push_str(&format!(
                    "你正在执行研究计划中的任务 {}: {}\n\n",
                    task.id, task.description
                ));
                p.push_str(&format!(
                    "## 研究背景\n- 研究类型: {rt}\n- 研究主题: {}\n- 总体目标: {}\n\n",
                    spec.topic,
                    list(&spec.objectives, lang)
                ));
                p.push_str(&format!("## 你的任务\n{}\n\n", task.description));
                p.push_str(&format!(
                    "## 执行提示\n- 需要的数据: {}\n- 关键问题: {}\n- 建议工具: {}\n\n",
                    list(&task.hints.data_needs, lang),
                    list(&task.hints.key_questions, lang),
                    list(&task.hints.suggested_tools, lang)
                ));
                if !prior.is_empty() {
                    p.push_str("## 前序任务的分析结果\n");
                    for s in prior {
                        p.push_str(&format!("### 任务 {}\n{}\n\n", plan.id(s.index), s.text));
                    }
                }
                p.push_str("## 执行要求\n撰写完整的section分析（800-1500字，包含具体数据和洞察），格式为：\n## {section标题}\n\n{分析内容，必须包含定量数据、具体时间、来源引用}\n\n注意：返回完整的分析文本，不是原始检索结果。");
            }
            Lang::En => {
                p.push_str(&format!(
                    "You are executing task {} of a research plan: {}\n\n",
                    task.id, task.description
                ));
                p.push_str(&format!(
                    "## Background\n- Research type: {rt}\n- Topic: {}\n- Objectives: {}\n\n",
                    spec.topic,
                    list(&spec.objectives, lang)
                ));
                p.push_str(&format!("## Your task\n{}\n\n", task.description));
                p.push_str(&format!(
                    "## Hints\n- Data needed: {}\n- Key questions: {}\n- Suggested tools: {}\n\n",
                    list(&task.hints.data_needs, lang),
                    list(&task.hints.key_questions, lang),
                    list(&task.hints.suggested_tools, lang)
                ));
                if !prior.is_empty() {
                    p.push_str("## Findings of prerequisite tasks\n");
                    for s in prior {
                        p.push_str(&format!("### Task {}\n{}\n\n", plan.id(s.index), s.text));
                    }
                }
                p.push_str("## Requirements\nWrite the complete section (800-1500 words, with figures, dates and sources) as:\n## {section title}\n\n{analysis}\n\nReturn the finished analysis, not raw search results.");
            }
        }
        vec![ChatMessage::user(p)]
    }

    fn integrator(
        &self,
        plan: &ValidatedPlan,
        sections: &[SectionSummary<'_>],
    ) -> Vec<ChatMessage> {
        let spec = plan.spec();
        let lang = plan.lang();
        let mut p = String::new();
        match lang {
            Lang::Zh => p.push_str(&format!(
                "请为研究报告「{}」撰写执行摘要（200-400字）。目标：{}。检查各章节之间是否存在矛盾并指出。各章节如下：\n\n",
                spec.topic,
                list(&spec.objectives, lang)
            )),
            Lang::En => p.push_str(&format!(
                "Write the executive summary (150-300 words) of the research report \"{}\". Objectives: {}. Point out any contradictions between sections. The sections:\n\n",
                spec.topic,
                list(&spec.objectives, lang)
            )),
        }
        for s in sections {
            match s.text {
                Some(t) => p.push_str(&format!("{t}\n\n")),
                None => p.push_str(&format!(
                    "[{} {}: {}]\n\n",
                    plan.id(s.index),
                    plan.task(s.index).title(),
                    s.status
                )),
            }
        }
        vec![ChatMessage::user(p)]
    }
}
