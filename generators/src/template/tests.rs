//! End-to-end tests of the renderer: both syntaxes, functions, missing keys, errors and limits.
