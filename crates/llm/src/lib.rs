//! mtr-llm: every LLM call mtr makes goes through here: OpenAI-compatible endpoints, judge
//! ensembles, structured output with honest parse status, a content-addressed cache so that
//! reruns never pay twice, rate limits, retries and a cost ledger.
