//! `--time-budget` for the audit: which of the planned dialogues this run audits. Before any
//! judgement is asked for, every dialogue's remaining calls (those an earlier run's
//! `items.jsonl` does not answer; cached calls are free) are estimated by the same estimator as
//! the dry run ([`mtr_llm::Llm::estimate`]) and planned by mtr-llm's one time-budget planner
//! ([`mtr_llm::budget::select`]): timed at the endpoints' configured or measured speed,
//! dialogues are taken in plan order while the time already spent plus their cumulative
//! expected time fits the budget, the others are not started and left for a rerun. Where an
//! endpoint's speed is unknown nothing is cut and the budget is only a deadline. Either way no
//! new judgement call starts once the budget is spent ([`Gate`]); what was judged is written,
//! and a rerun (same fingerprint: the budget is no part of it) goes on where this one stopped.

mod dialogue_plan;
mod gate;
mod work;

pub use dialogue_plan::{BudgetPlan, TimeBudget};
pub(crate) use dialogue_plan::{TimeBudgetInfo, select};
pub(crate) use gate::Gate;
pub use mtr_llm::budget::budget_text;
pub(crate) use work::{DialogueWork, estimate};

#[cfg(test)]
mod tests;
