//! mtr-metrics: IR measures that equal trec_eval's to the last digit, and the statistics
//! (bootstrap confidence intervals, paired tests, agreement) that audit and bench report.
//! Pure computation: no async, no LLM.
