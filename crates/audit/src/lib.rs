//! mtr-audit (MTR-Eval): an ensemble of LLM judges scores a benchmark on query-evidence
//! alignment, evidence completeness (a seeded, position-randomized discriminability test),
//! answer faithfulness and answer quality, with confidence intervals and bias checks.
