//! mtr-bench: score retrievers and external runs on a multi-turn benchmark with strata,
//! bootstrap confidence intervals and paired significance tests, and render leaderboards.
