//! mtr-pipeline (MTR-Pipeline): curate a corpus, chunk it, walk topic paths through it and
//! let user, answerer, humanizer and verifier agents write multi-turn dialogues whose gold
//! evidence is verified unique against the whole corpus.
