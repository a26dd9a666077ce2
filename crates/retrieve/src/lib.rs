//! mtr-retrieve: BM25 (tantivy, on disk) and dense retrieval over corpora too large for
//! memory, conversational query formulation from a turn's history, and rank fusion.
