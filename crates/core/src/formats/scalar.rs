//! JSON scalars as text and the numeric order of conversation and turn numbers, for the JSON
//! formats that number their turns (`Conversation_no`, `Turn_no`: TopiOCQA, QReCC; CAsT's
//! topic numbers).

use std::path::Path;

use serde_json::Value;

use super::builder::Diag;
use crate::error::{InputError, Result};

/// A JSON number or string as text (`1` and `"1"` are the same conversation).
pub(crate) fn scalar(v: &Value) -> Option<String> {
    match v {
        Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_string()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// Orders conversation and turn numbers numerically when they are numbers.
pub(crate) type SortKey = (u64, String);

/// Sort key of a turn number: numeric when it is a number.
pub(crate) fn turn_key(s: &str) -> SortKey {
    (s.parse::<u64>().unwrap_or(u64::MAX), s.to_string())
}

/// A record's `Conversation_no` and `Turn_no` as text; a record without both (as numbers or
/// strings) is a `malformed-record` problem at `data:line`, `Ok(None)` when lenient.
pub(crate) fn conversation_turn(
    conversation_no: &Value,
    turn_no: &Value,
    data: &Path,
    line: u64,
    diag: &mut Diag,
) -> Result<Option<(String, String)>> {
    let (Some(conv), Some(turn)) = (scalar(conversation_no), scalar(turn_no)) else {
        diag.problem(
            "malformed-record",
            InputError::new(
                data,
                "`Conversation_no` and `Turn_no` must be numbers or strings",
            )
            .line(line)
            .field("Conversation_no"),
        )?;
        return Ok(None);
    };
    Ok(Some((conv, turn)))
}

/// An id TREC files can hold: its whitespace runs as `_` (`Benefits Planner: Retirement#1_0`
/// -> `Benefits_Planner:_Retirement#1_0`).
pub(crate) fn id_token(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join("_")
}
