//! Jsonnet files of a directory source, evaluated as Argo CD's repo server does: top-level
//! arguments (`directory.jsonnet.tlas`) and external variables (`extVars`, as code with
//! `code: true`), imports looked up beside the importing file, then in the source directory and
//! the `libs` (relative to the repository root), and confined to the repository: an import that
//! resolves outside it is an error naming it. The output is one object, an array of objects or
//! a List. Evaluated by `rsjsonnet-lang`, with its call-stack limit; an error names the file and
//! line. The evaluator cannot be interrupted, so the time and memory of one evaluation are
//! bounded by whoever runs [`evaluate`]: the shell runs it in a child process
//! ([`JsonnetEvaluator`], a [`JsonnetRequest`] in, the documents or the error out). Imports
//! are read through the caller's [`SourceTree`]; this module must not run processes or reach
//! the network.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Component, Path, PathBuf};

use rsjsonnet_lang::arena::Arena;
use rsjsonnet_lang::interner::InternedStr;
use rsjsonnet_lang::lexer::LexError;
use rsjsonnet_lang::parser::ParseError;
use rsjsonnet_lang::program::{
    AnalyzeError, Callbacks, EvalError, EvalErrorKind, EvalStackTraceItem, ImportError, LoadError,
    NativeError, Program, Thunk, Value,
};
use rsjsonnet_lang::span::{SpanContextId, SpanId};
use serde::{Deserialize, Serialize};

use super::expand::expand;
use serde_json::Value as Json;

use super::document::json_kind;
use super::limits::{MAX_JSONNET_STACK, MAX_MANIFEST_FILE_BYTES};
use super::source_tree::{FileKind, SourceTree};

/// Argo CD's `source.directory.jsonnet`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct JsonnetOptions {
    /// Top-level arguments, given to a file whose value is a function.
    pub tlas: Vec<JsonnetVariable>,
    /// External variables (`std.extVar`).
    pub ext_vars: Vec<JsonnetVariable>,
    /// Library directories searched by imports, relative to the repository root.
    pub libs: Vec<String>,
}

impl JsonnetOptions {
    /// Whether a value of `tlas` or `extVars` names a variable of the build environment (so
    /// the output depends on the Application, not only on the directory).
    #[must_use]
    pub fn uses_environment(&self) -> bool {
        self.tlas
            .iter()
            .chain(&self.ext_vars)
            .any(|v| v.value.contains('$'))
    }

    /// These options with `$NAME` and `${NAME}` in the values of `tlas` and `extVars` expanded
    /// from `environment` (Argo CD's build environment: `ARGOCD_APP_NAME`, …), as Argo CD
    /// expands them with Go's `os.Expand`: an unknown name is empty, `$$` is `$`.
    #[must_use]
    pub fn expanded(&self, environment: &BTreeMap<String, String>) -> Self {
        let expand = |variables: &[JsonnetVariable]| {
            variables
                .iter()
                .map(|v| JsonnetVariable {
                    value: expand(&v.value, environment),
                    ..v.clone()
                })
                .collect()
        };
        Self {
            tlas: expand(&self.tlas),
            ext_vars: expand(&self.ext_vars),
            libs: self.libs.clone(),
        }
    }
}

/// One top-level argument or external variable.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct JsonnetVariable {
    pub name: String,
    /// A string, or Jsonnet code when `code`.
    pub value: String,
    pub code: bool,
}

/// One evaluation: the file, its text and where its imports are looked up.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JsonnetRequest {
    /// The file (imports start beside it).
    pub path: PathBuf,
    /// Its name in errors (relative to the source directory).
    pub label: PathBuf,
    /// Its text, already read within the limits of an Application.
    pub text: String,
    /// The repository root (a plain source directory's root when it is not in a repository):
    /// imports must stay inside it, and `libs` are relative to it.
    pub repository: PathBuf,
    /// The source directory (searched after the importing file's directory).
    pub source: PathBuf,
    pub options: JsonnetOptions,
}

/// What evaluates the Jsonnet files of a directory source: [`InProcess`], or the shell's child
/// process, which bounds the time and memory of each evaluation.
pub trait JsonnetEvaluator {
    /// The documents `request`'s file makes.
    ///
    /// # Errors
    /// A message for the file's error (the caller names the file before it).
    fn evaluate(&self, request: &JsonnetRequest) -> Result<Vec<Json>, String>;
}

/// [`evaluate`] in this process, its imports read from `tree`: no bound on time or memory but
/// the call stack's (what the child process that bounds them runs, and tests).
#[derive(Clone, Copy)]
pub struct InProcess<'t> {
    pub tree: &'t dyn SourceTree,
}

impl JsonnetEvaluator for InProcess<'_> {
    fn evaluate(&self, request: &JsonnetRequest) -> Result<Vec<Json>, String> {
        evaluate(self.tree, request)
    }
}

/// Evaluates the Jsonnet file of `request` and returns the documents it makes: its value, or
/// each item of an array. Imports are read from `tree`.
///
/// # Errors
/// A message naming the file and line of a syntax or evaluation error, an import outside the
/// repository or missing, a bad `libs` entry, or output that is not objects.
pub fn evaluate(tree: &dyn SourceTree, request: &JsonnetRequest) -> Result<Vec<Json>, String> {
    let repository = tree
        .canonicalize(&request.repository)
        .map_err(|error| format!("{}: {error}", request.repository.display()))?;
    let mut search = vec![request.source.clone()];
    for lib in &request.options.libs {
        search.push(library(tree, &repository, lib)?);
    }
    let arena = Arena::new();
    let mut program = Program::new(&arena);
    program.set_max_stack(MAX_JSONNET_STACK);
    let mut files = Files {
        tree,
        repository,
        search,
        sources: BTreeMap::new(),
        imported: BTreeMap::new(),
        failure: None,
    };
    let thunk = files.load(
        &mut program,
        &request.text,
        request.label.clone(),
        request.path.clone(),
    )?;
    for (name, variable) in unique(&request.options.ext_vars) {
        let value = files.variable(&mut program, "extVars", variable)?;
        let name = program.intern_str(name);
        program.add_ext_var(name, &value);
    }
    let value = program
        .eval_value(&thunk, &mut files)
        .map_err(|error| files.eval_message(&program, &error))?;
    let value = if value.is_function() {
        let function = program.value_to_thunk(&value);
        let mut arguments: Vec<(InternedStr<'_>, Thunk<'_>)> = Vec::new();
        for (name, variable) in unique(&request.options.tlas) {
            let thunk = files.variable(&mut program, "tlas", variable)?;
            arguments.push((program.intern_str(name), thunk));
        }
        program
            .eval_call(&function, &[], &arguments, &mut files)
            .map_err(|error| files.eval_message(&program, &error))?
    } else {
        value
    };
    let text = program
        .manifest_json(&value, false)
        .map_err(|error| files.eval_message(&program, &error))?;
    let json: Json =
        serde_json::from_str(&text).map_err(|error| format!("invalid output: {error}"))?;
    match json {
        Json::Array(items) => items
            .into_iter()
            .enumerate()
            .map(|(index, item)| match item {
                Json::Object(_) => Ok(item),
                other => Err(format!(
                    "item {index} of the output array is {}, not an object",
                    json_kind(&other)
                )),
            })
            .collect(),
        Json::Object(_) => Ok(vec![json]),
        other => Err(format!(
            "the output is {}, not an object or an array of objects",
            json_kind(&other)
        )),
    }
}

/// The variables by name, the last one of a name winning (as go-jsonnet's maps do).
fn unique(variables: &[JsonnetVariable]) -> BTreeMap<&str, &JsonnetVariable> {
    variables.iter().map(|v| (v.name.as_str(), v)).collect()
}

/// The directory of a `libs` entry: relative to the repository root and inside it.
fn library(tree: &dyn SourceTree, repository: &Path, lib: &str) -> Result<PathBuf, String> {
    let relative = Path::new(lib.trim_start_matches('/'));
    let climbs = relative
        .components()
        .any(|c| matches!(c, Component::ParentDir));
    let path = repository.join(relative);
    match tree.canonicalize(&path) {
        Ok(found) if !climbs && found.starts_with(repository) => Ok(found),
        Ok(_) => Err(format!(
            "directory.jsonnet.libs: {lib:?} is outside the repository"
        )),
        Err(error) => Err(format!("directory.jsonnet.libs: {lib:?}: {error}")),
    }
}

/// The text of a Jsonnet file of `tree`, within the size limit of a manifest file.
fn read(tree: &dyn SourceTree, path: &Path) -> Result<String, String> {
    let unreadable = |error: std::io::Error| format!("cannot read: {error}");
    let info = tree.info(path).map_err(unreadable)?;
    if info.kind != FileKind::File {
        return Err("not a regular file".to_owned());
    }
    if info.len > MAX_MANIFEST_FILE_BYTES {
        return Err(format!(
            "{} bytes, more than the limit of {MAX_MANIFEST_FILE_BYTES} per manifest file; not read",
            info.len
        ));
    }
    let mut text = String::new();
    let (_, mut file) = tree.open(path).map_err(unreadable)?;
    file.read_to_string(&mut text).map_err(unreadable)?;
    Ok(text)
}

/// One loaded source: its name in errors, its directory (imports start there) and its text.
struct Loaded {
    label: PathBuf,
    directory: Option<PathBuf>,
    text: String,
}

/// The files of one evaluation, and the import callbacks.
struct Files<'p, 't> {
    tree: &'t dyn SourceTree,
    repository: PathBuf,
    search: Vec<PathBuf>,
    sources: BTreeMap<SpanContextId, Loaded>,
    /// Imported files by their canonical path (imported once, as go-jsonnet caches them).
    imported: BTreeMap<PathBuf, Thunk<'p>>,
    /// Why the last import failed (the evaluator's error only says that it did).
    failure: Option<String>,
}

impl<'p> Files<'p, '_> {
    /// Parses `text` (the file `path`, named `label`) into a thunk.
    fn load(
        &mut self,
        program: &mut Program<'p>,
        text: &str,
        label: PathBuf,
        path: PathBuf,
    ) -> Result<Thunk<'p>, String> {
        let (context, _) = program.span_manager_mut().insert_source_context(text.len());
        self.sources.insert(
            context,
            Loaded {
                label: label.clone(),
                directory: path.parent().map(Path::to_owned),
                text: text.to_owned(),
            },
        );
        let this_file = label.display().to_string();
        program
            .load_source(context, text.as_bytes(), true, &this_file)
            .map_err(|error| self.load_message(program, &error))
    }

    /// A top-level argument or external variable as a thunk (its code parsed when `code`).
    fn variable(
        &mut self,
        program: &mut Program<'p>,
        field: &str,
        variable: &JsonnetVariable,
    ) -> Result<Thunk<'p>, String> {
        if variable.code {
            let label = PathBuf::from(format!("directory.jsonnet.{field}[{}]", variable.name));
            self.load(program, &variable.value, label, PathBuf::new())
        } else {
            Ok(program.value_to_thunk(&Value::string(&variable.value)))
        }
    }

    /// `file:line` of a span, when it is in a loaded file (not the standard library).
    fn locate(&self, program: &Program<'p>, span: SpanId) -> Option<String> {
        let (context, start, _) = program.span_manager().get_span(span);
        let loaded = self.sources.get(&context)?;
        let before = loaded.text.get(..start).unwrap_or(&loaded.text);
        let line = before.matches('\n').count() + 1;
        Some(format!("{}:{line}", loaded.label.display()))
    }

    fn load_message(&self, program: &Program<'p>, error: &LoadError) -> String {
        let (span, message) = match error {
            LoadError::Lex(error) => (
                lex_span(error),
                format!("syntax error: {}", debug_words(&format!("{error:?}"))),
            ),
            LoadError::Parse(ParseError::Expected {
                span,
                expected,
                instead,
            }) => (
                *span,
                format!(
                    "syntax error: expected {}, found {}",
                    expected
                        .iter()
                        .map(|token| token_words(&format!("{token:?}")))
                        .collect::<Vec<_>>()
                        .join(" or "),
                    token_words(&format!("{instead:?}"))
                ),
            ),
            LoadError::Analyze(error) => analyze_message(error),
        };
        self.with_location(program, Some(span), &[], &message)
    }

    fn eval_message(&self, program: &Program<'p>, error: &EvalError) -> String {
        let message = match (&error.kind, &self.failure) {
            (EvalErrorKind::ImportFailed { .. }, Some(failure)) => failure.clone(),
            (kind, _) => eval_message(kind),
        };
        let span = kind_span(&error.kind);
        self.with_location(program, span, &error.stack_trace, &message)
    }

    /// `message` after the file and line of `span`, else of the innermost expression of the
    /// stack in a loaded file.
    fn with_location(
        &self,
        program: &Program<'p>,
        span: Option<SpanId>,
        stack: &[EvalStackTraceItem],
        message: &str,
    ) -> String {
        let location = span
            .and_then(|span| self.locate(program, span))
            .or_else(|| {
                stack
                    .iter()
                    .rev()
                    .filter_map(trace_span)
                    .find_map(|span| self.locate(program, span))
            });
        match location {
            Some(location) => format!("{location}: {message}"),
            None => message.to_owned(),
        }
    }

    /// The file an import from `from` names: beside the importing file, then in the search
    /// path (last first, as go-jsonnet looks); the first that exists, which must be inside the
    /// repository.
    fn resolve(&mut self, program: &Program<'p>, from: SpanId, path: &str) -> Option<PathBuf> {
        let (context, _, _) = program.span_manager().get_span(from);
        let beside = self
            .sources
            .get(&context)
            .and_then(|loaded| loaded.directory.clone());
        let candidates = beside.iter().chain(self.search.iter().rev());
        let found = candidates
            .map(|directory| directory.join(path))
            .find(|candidate| self.tree.is_file(candidate));
        let Some(found) = found else {
            self.failure = Some(format!("import {path:?}: no such file"));
            return None;
        };
        match self.tree.canonicalize(&found) {
            Ok(canonical) if canonical.starts_with(&self.repository) => Some(canonical),
            Ok(_) => {
                self.failure = Some(format!(
                    "import {path:?} is outside the repository; refused"
                ));
                None
            }
            Err(error) => {
                self.failure = Some(format!("import {path:?}: {error}"));
                None
            }
        }
    }

    /// The text of an imported file, within the size limit.
    fn read_import(&mut self, path: &Path, name: &str) -> Option<String> {
        match read(self.tree, path) {
            Ok(text) => Some(text),
            Err(message) => {
                self.failure = Some(format!("import {name:?}: {message}"));
                None
            }
        }
    }

    /// The path of `path` relative to the repository, as errors name it.
    fn label(&self, path: &Path) -> PathBuf {
        path.strip_prefix(&self.repository)
            .map_or_else(|_| path.to_owned(), Path::to_owned)
    }
}

impl<'p> Callbacks<'p> for Files<'p, '_> {
    fn import(
        &mut self,
        program: &mut Program<'p>,
        from: SpanId,
        path: &str,
    ) -> Result<Thunk<'p>, ImportError> {
        let file = self.resolve(program, from, path).ok_or(ImportError)?;
        if let Some(thunk) = self.imported.get(&file) {
            return Ok(thunk.clone());
        }
        let text = self.read_import(&file, path).ok_or(ImportError)?;
        let label = self.label(&file);
        match self.load(program, &text, label, file.clone()) {
            Ok(thunk) => {
                self.imported.insert(file, thunk.clone());
                Ok(thunk)
            }
            Err(message) => {
                self.failure = Some(message);
                Err(ImportError)
            }
        }
    }

    fn import_str(
        &mut self,
        program: &mut Program<'p>,
        from: SpanId,
        path: &str,
    ) -> Result<String, ImportError> {
        let file = self.resolve(program, from, path).ok_or(ImportError)?;
        self.read_import(&file, path).ok_or(ImportError)
    }

    fn import_bin(
        &mut self,
        program: &mut Program<'p>,
        from: SpanId,
        path: &str,
    ) -> Result<Vec<u8>, ImportError> {
        self.import_str(program, from, path).map(String::into_bytes)
    }

    fn trace(&mut self, _: &mut Program<'p>, _: &str, _: &[EvalStackTraceItem]) {}

    fn native_call(
        &mut self,
        _: &mut Program<'p>,
        _: InternedStr<'p>,
        _: &[Value<'p>],
    ) -> Result<Value<'p>, NativeError> {
        // No native function is registered, so none can be called.
        Err(NativeError)
    }
}

fn trace_span(item: &EvalStackTraceItem) -> Option<SpanId> {
    match item {
        EvalStackTraceItem::Expr { span }
        | EvalStackTraceItem::Variable { span, .. }
        | EvalStackTraceItem::Import { span } => Some(*span),
        EvalStackTraceItem::Call { span, .. }
        | EvalStackTraceItem::ArrayItem { span, .. }
        | EvalStackTraceItem::ObjectField { span, .. } => *span,
        EvalStackTraceItem::CompareArrayItem { .. }
        | EvalStackTraceItem::CompareObjectField { .. }
        | EvalStackTraceItem::ManifestArrayItem { .. }
        | EvalStackTraceItem::ManifestObjectField { .. } => None,
    }
}

fn lex_span(error: &LexError) -> SpanId {
    match error {
        LexError::InvalidChar { span, .. }
        | LexError::InvalidUtf8 { span, .. }
        | LexError::UnfinishedMultilineComment { span }
        | LexError::LeadingZeroInNumber { span }
        | LexError::MissingFracDigits { span }
        | LexError::MissingExpDigits { span }
        | LexError::MissingDigitAfterUnderscore { span }
        | LexError::ExpOverflow { span }
        | LexError::InvalidEscapeInString { span, .. }
        | LexError::IncompleteUnicodeEscape { span }
        | LexError::InvalidUtf16EscapeSequence { span, .. }
        | LexError::UnfinishedString { span }
        | LexError::MissingLineBreakAfterTextBlockStart { span }
        | LexError::MissingWhitespaceTextBlockStart { span }
        | LexError::InvalidTextBlockTermination { span } => *span,
    }
}

fn analyze_message(error: &AnalyzeError) -> (SpanId, String) {
    match error {
        AnalyzeError::UnknownVariable { span, name } => {
            (*span, format!("unknown variable `{name}`"))
        }
        AnalyzeError::SelfOutsideObject { self_span: span } => {
            (*span, "`self` outside an object".to_owned())
        }
        AnalyzeError::SuperOutsideObject { super_span: span } => {
            (*span, "`super` outside an object".to_owned())
        }
        AnalyzeError::DollarOutsideObject { dollar_span: span } => {
            (*span, "`$` outside an object".to_owned())
        }
        AnalyzeError::RepeatedLocalName {
            repeated_span: span,
            name,
            ..
        } => (*span, format!("local `{name}` defined twice")),
        AnalyzeError::RepeatedFieldName {
            repeated_span: span,
            name,
            ..
        } => (*span, format!("field `{name}` defined twice")),
        AnalyzeError::RepeatedParamName {
            repeated_span: span,
            name,
            ..
        } => (*span, format!("parameter `{name}` defined twice")),
        AnalyzeError::PositionalArgAfterNamed { arg_span: span } => {
            (*span, "positional argument after a named one".to_owned())
        }
        AnalyzeError::TextBlockAsImportPath { span }
        | AnalyzeError::ComputedImportPath { span } => {
            (*span, "an import path must be a string literal".to_owned())
        }
    }
}

/// What an evaluation error says.
fn eval_message(kind: &EvalErrorKind) -> String {
    use EvalErrorKind as K;
    match kind {
        K::StackOverflow => format!("stack overflow (more than {MAX_JSONNET_STACK} nested calls)"),
        K::ExplicitError { message, .. } => format!("error: {message}"),
        K::AssertFailed { message, .. } => message.as_ref().map_or_else(
            || "assertion failed".to_owned(),
            |m| format!("assertion failed: {m}"),
        ),
        K::UnknownObjectField { field_name, .. } => {
            format!("field `{field_name}` does not exist")
        }
        K::UnknownExtVar { name } => format!("undefined external variable `{name}`"),
        K::ImportFailed { path, .. } => format!("cannot import {path:?}"),
        K::CallParamNotBound { param_name, .. } => {
            format!("parameter `{param_name}` is not bound (a missing top-level argument?)")
        }
        K::UnknownCallParam { param_name, .. } => {
            format!("function has no parameter `{param_name}`")
        }
        K::ManifestFunction => "a function cannot be output".to_owned(),
        K::Other { message, .. } => message.clone(),
        other => debug_words(&format!("{other:?}")),
    }
}

/// The span an evaluation error carries, if any.
fn kind_span(kind: &EvalErrorKind) -> Option<SpanId> {
    use EvalErrorKind as K;
    match kind {
        K::InvalidIndexedType { span, .. }
        | K::InvalidSlicedType { span, .. }
        | K::SliceIndexOrStepIsNotNumber { span, .. }
        | K::StringIndexIsNotNumber { span, .. }
        | K::ArrayIndexIsNotNumber { span, .. }
        | K::NumericIndexIsNotValid { span, .. }
        | K::NumericIndexOutOfRange { span, .. }
        | K::ObjectIndexIsNotString { span, .. }
        | K::RepeatedFieldName { span, .. }
        | K::FieldNameIsNotString { span, .. }
        | K::UnknownObjectField { span, .. }
        | K::FieldOfNonObject { span }
        | K::SuperWithoutSuperObject { span }
        | K::ForSpecValueIsNotArray { span, .. }
        | K::CondIsNotBool { span, .. }
        | K::InvalidUnaryOpType { span, .. }
        | K::AssertFailed { span, .. }
        | K::ExplicitError { span, .. }
        | K::ImportFailed { span, .. } => Some(*span),
        K::CalleeIsNotFunction { span, .. }
        | K::TooManyCallArgs { span, .. }
        | K::UnknownCallParam { span, .. }
        | K::RepeatedCallParam { span, .. }
        | K::CallParamNotBound { span, .. }
        | K::InvalidBinaryOpTypes { span, .. }
        | K::NumberNotBitwiseSafe { span }
        | K::NumberOverflow { span }
        | K::NumberNan { span }
        | K::DivByZero { span }
        | K::ShiftByNegative { span }
        | K::Other { span, .. } => *span,
        _ => None,
    }
}

/// An error without a hand-written message, from its `Debug` text: its variant's name in words
/// with its details but its spans (`InvalidIndexedType { span: .., got_type: Null }` →
/// `invalid indexed type (got_type: Null)`).
fn debug_words(debug: &str) -> String {
    let (name, details) = debug.split_once(" {").unwrap_or((debug, ""));
    let details = details.strip_suffix('}').unwrap_or(details);
    // The fields, split at the commas outside nested braces and brackets.
    let mut fields = Vec::new();
    let (mut depth, mut start) = (0_i32, 0);
    for (index, c) in details.char_indices() {
        match c {
            '{' | '[' | '(' => depth += 1,
            '}' | ']' | ')' => depth -= 1,
            ',' if depth == 0 => {
                fields.push(details[start..index].trim());
                start = index + 1;
            }
            _ => {}
        }
    }
    fields.push(details[start..].trim());
    let shown: Vec<&str> = fields
        .into_iter()
        .filter(|f| {
            let field = f.split(':').next().unwrap_or("");
            !f.is_empty() && field != "span" && !field.ends_with("_span")
        })
        .collect();
    let mut text = camel_words(name);
    if !shown.is_empty() {
        text.push_str(&format!(" ({})", shown.join(", ")));
    }
    text
}

/// A token as the parser's `Debug` writes it, in words: `Simple(LeftBrace)` → `left brace`,
/// `Ident("x")` → `ident "x"`.
fn token_words(debug: &str) -> String {
    let inner = debug
        .strip_prefix("Simple(")
        .and_then(|rest| rest.strip_suffix(')'))
        .unwrap_or(debug);
    match inner.split_once('(') {
        Some((name, value)) => format!("{} {}", camel_words(name), value.trim_end_matches(')')),
        None => camel_words(inner),
    }
}

/// `InvalidIndexedType` → `invalid indexed type`.
fn camel_words(name: &str) -> String {
    let mut text = String::new();
    for (index, c) in name.chars().enumerate() {
        if c.is_uppercase() && index > 0 {
            text.push(' ');
        }
        text.push(c.to_ascii_lowercase());
    }
    text
}

#[cfg(test)]
mod tests {
    use super::super::directory::{DirectoryOptions, load_directory_of};
    use super::super::memory_tree::MemoryTree;
    use super::*;

    /// A repository at `/repo` with `files` (path, text), and `/outside.libsonnet` beside it
    /// (imports that resolve outside a repository on a real file system, through symbolic
    /// links or absolute paths, are tested on the shell's tree).
    fn repository(files: &[(&str, &str)]) -> MemoryTree {
        let mut tree = MemoryTree::default();
        tree.write("/outside.libsonnet", "{ secret: 1 }");
        for (path, text) in files {
            tree.write(&format!("/repo/{path}"), *text);
        }
        tree
    }

    fn variable(name: &str, value: &str, code: bool) -> JsonnetVariable {
        JsonnetVariable {
            name: name.into(),
            value: value.into(),
            code,
        }
    }

    /// The objects (`Kind name`) and the errors of the source `app` of the repository.
    fn load(tree: &MemoryTree, jsonnet: JsonnetOptions) -> (Vec<String>, Vec<String>) {
        let repository = Path::new("/repo");
        let options = DirectoryOptions {
            jsonnet,
            ..DirectoryOptions::default()
        };
        let (resources, errors) = load_directory_of(
            tree,
            &repository.join("app"),
            repository,
            &options,
            &InProcess { tree },
        );
        (
            resources
                .iter()
                .map(|r| {
                    format!(
                        "{} {}",
                        r.key(),
                        serde_json::to_string(&r.body["spec"]).unwrap()
                    )
                })
                .collect(),
            errors.iter().map(ToString::to_string).collect(),
        )
    }

    const GUESTBOOK_LIB: &str = r#"{
  service(name, port):: {
    apiVersion: "v1", kind: "Service",
    metadata: { name: name },
    spec: { ports: [{ port: port }], selector: { app: name } },
  },
  deployment(name, image, replicas):: {
    apiVersion: "apps/v1", kind: "Deployment",
    metadata: { name: name },
    spec: { replicas: replicas, selector: { matchLabels: { app: name } } },
  },
}
"#;

    const GUESTBOOK: &str = r#"local guestbook = import "guestbook.libsonnet";
function(name, replicas=1)
  [
    guestbook.service(name, std.extVar("port")),
    guestbook.deployment(name, std.extVar("image"), replicas),
  ]
"#;

    #[test]
    fn tlas_ext_vars_and_libs_make_the_objects() {
        let tree = repository(&[
            ("app/guestbook.jsonnet", GUESTBOOK),
            (
                "app/notes.libsonnet",
                "error 'a library is never evaluated on its own'",
            ),
            ("lib/guestbook.libsonnet", GUESTBOOK_LIB),
        ]);
        let options = JsonnetOptions {
            tlas: vec![
                variable("name", "ui", false),
                variable("replicas", "1 + 2", true),
            ],
            ext_vars: vec![
                variable("image", "guestbook:v1", false),
                variable("port", "80", true),
            ],
            libs: vec!["lib".into()],
        };
        let (objects, errors) = load(&tree, options);
        assert_eq!(errors, Vec::<String>::new());
        assert_eq!(
            objects,
            [
                r#"Service ui {"ports":[{"port":80}],"selector":{"app":"ui"}}"#,
                r#"Deployment ui {"replicas":3,"selector":{"matchLabels":{"app":"ui"}}}"#,
            ]
        );
    }

    #[test]
    fn values_expand_argo_cds_build_environment_as_go_does() {
        let environment = BTreeMap::from([
            ("ARGOCD_APP_NAME".to_owned(), "shop".to_owned()),
            ("ARGOCD_APP_NAMESPACE".to_owned(), "prod".to_owned()),
        ]);
        for (text, expected) in [
            ("$ARGOCD_APP_NAME-${ARGOCD_APP_NAMESPACE}", "shop-prod"),
            ("cost: $$5, $UNKNOWN.", "cost: $5, ."),
            ("a $ b $", "a $ b $"),
            ("${}x ${unclosed", "x unclosed"),
            ("$1 ${ARGOCD_APP_NAME}s", " shops"),
        ] {
            assert_eq!(expand(text, &environment), expected, "{text}");
        }
        let options = JsonnetOptions {
            tlas: vec![variable("name", "$ARGOCD_APP_NAME", false)],
            ext_vars: vec![variable("ns", "'${ARGOCD_APP_NAMESPACE}'", true)],
            libs: vec!["$ARGOCD_APP_NAME".into()],
        };
        let expanded = options.expanded(&environment);
        assert_eq!(expanded.tlas[0].value, "shop");
        assert_eq!(expanded.ext_vars[0].value, "'prod'");
        assert!(expanded.ext_vars[0].code);
        assert_eq!(expanded.libs, ["$ARGOCD_APP_NAME"], "libs are not expanded");
    }

    #[test]
    fn outputs_are_an_object_an_array_or_a_list() {
        let object = r#"{apiVersion: "v1", kind: "ConfigMap", metadata: {name: "a"}, spec: {}}"#;
        let list = r#"{apiVersion: "v1", kind: "List", items: [
            {apiVersion: "v1", kind: "ConfigMap", metadata: {name: "b"}, spec: {}}]}"#;
        let tree = repository(&[
            ("app/a.jsonnet", object),
            ("app/b.jsonnet", list),
            ("app/c.jsonnet", "[1]"),
            ("app/d.jsonnet", "\"text\""),
        ]);
        let (objects, errors) = load(&tree, JsonnetOptions::default());
        assert_eq!(objects, ["ConfigMap a {}", "ConfigMap b {}"]);
        assert_eq!(
            errors,
            [
                "c.jsonnet: item 0 of the output array is a number, not an object",
                "d.jsonnet: the output is a string, not an object or an array of objects",
            ]
        );
    }

    #[test]
    fn errors_name_the_file_and_line() {
        let tree = repository(&[
            ("app/a.jsonnet", "{\n  a: 1,\n  b: ,\n}\n"),
            (
                "app/b.jsonnet",
                "local lib = import 'lib.libsonnet';\nlib.make(1)\n",
            ),
            (
                "app/lib.libsonnet",
                "{\n  make(x)::\n    error 'no object for ' + x,\n}\n",
            ),
            ("app/c.jsonnet", "{\n  a: std.extVar('missing'),\n}\n"),
            ("app/d.jsonnet", "local f(x) = f(x + 1) + 1;\nf(0)\n"),
            ("app/e.jsonnet", "function(name) {}\n"),
            ("app/f.jsonnet", "{\n  a: 1 @ 2,\n}\n"),
            ("app/g.jsonnet", "local a = [1];\n{ b: a[5] }\n"),
        ]);
        let (objects, errors) = load(&tree, JsonnetOptions::default());
        assert_eq!(objects, Vec::<String>::new());
        assert_eq!(errors.len(), 7, "{errors:#?}");
        assert_eq!(
            errors[0],
            "a.jsonnet: a.jsonnet:3: syntax error: expected expr, found comma"
        );
        assert_eq!(
            errors[1],
            "b.jsonnet: app/lib.libsonnet:3: error: no object for 1"
        );
        assert_eq!(
            errors[2],
            "c.jsonnet: c.jsonnet:2: undefined external variable `missing`"
        );
        assert!(
            errors[3].starts_with("d.jsonnet: d.jsonnet:1: stack overflow"),
            "{}",
            errors[3]
        );
        assert_eq!(
            errors[4],
            "e.jsonnet: parameter `name` is not bound (a missing top-level argument?)"
        );
        assert_eq!(
            errors[5],
            "f.jsonnet: f.jsonnet:2: syntax error: invalid char (chr: '@')"
        );
        assert_eq!(
            errors[6],
            "g.jsonnet: g.jsonnet:2: numeric index out of range (index: 5, length: 1)"
        );
    }

    #[test]
    fn imports_and_libs_outside_the_repository_are_refused() {
        let tree = repository(&[
            ("app/a.jsonnet", "(import '../../outside.libsonnet') + {}\n"),
            ("app/c.jsonnet", "import 'absent.libsonnet'\n"),
        ]);
        let (_, errors) = load(&tree, JsonnetOptions::default());
        assert_eq!(
            errors,
            [
                r#"a.jsonnet: a.jsonnet:1: import "../../outside.libsonnet" is outside the repository; refused"#,
                r#"c.jsonnet: c.jsonnet:1: import "absent.libsonnet": no such file"#,
            ]
        );
        let libs = JsonnetOptions {
            libs: vec!["../".into()],
            ..JsonnetOptions::default()
        };
        let tree = repository(&[("app/a.jsonnet", "{}")]);
        let (_, errors) = load(&tree, libs);
        assert_eq!(
            errors,
            [r#"a.jsonnet: directory.jsonnet.libs: "../" is outside the repository"#]
        );
    }
}
