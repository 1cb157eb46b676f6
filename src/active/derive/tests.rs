//! Tests of the /active derivations against fixture process trees.
