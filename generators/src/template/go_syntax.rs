//! Translation of Argo CD's Go-template syntax to minijinja source: fields and variables become
//! subscripts of `dotN`/`var_name` variables (a variable declared with `:=` is held in a
//! namespace, so an assignment inside a `range` is seen after it, as in Go), Go calls become
//! minijinja calls with the same argument order (a piped value last), `if`/`range`/`with` become
//! minijinja blocks with `break`/`continue`, and the templates a field defines (`define`,
//! `block`) become macros placed before its text, which `template` calls with the value that
//! becomes their `.` and `$`. Anything outside the supported subset is an error naming the
//! construct.

use std::fmt::Write as _;
use std::ops::Range;

use super::go_format;
use super::go_lexer::{Piece, Token, lex};
use super::sprig::{RANGE_PAIRS, RANGE_VALUES, VARIABLE, is_function};

/// The minijinja variable holding the root parameters (`$`).
pub(crate) const ROOT: &str = "dot0";

/// The attribute of a variable's namespace that holds its value.
const VALUE: &str = "flotilla_value";

/// A translated template, with where each Go action ended up (to name it in render errors).
#[derive(Debug, Clone)]
pub(crate) struct Translation {
    /// minijinja source.
    pub source: String,
    /// For each action, its byte range in `source` and its Go source.
    pub actions: Vec<(Range<usize>, String)>,
    /// Whether the text defines templates (macros, which must be rendered on their own).
    pub defines_templates: bool,
}

impl Translation {
    /// The Go source of the action whose translation covers byte `offset` of `source`.
    pub(crate) fn action_at(&self, offset: usize) -> Option<&str> {
        self.actions
            .iter()
            .find(|(range, _)| range.contains(&offset))
            .map(|(_, source)| source.as_str())
    }
}

/// Translates Go-template `text`. Missing keys are not the translation's concern: the
/// parameter maps themselves implement `missingkey` (see `go_params`).
pub(crate) fn translate(text: &str) -> Result<Translation, String> {
    let mut translator = Translator {
        out: String::with_capacity(text.len() * 2),
        actions: Vec::new(),
        dots: vec![ROOT.to_string()],
        root: ROOT.to_string(),
        blocks: Vec::new(),
        scopes: vec![Vec::new()],
        counter: 0,
        templates: Vec::new(),
        definitions: String::new(),
        definition_actions: Vec::new(),
        buffer: 0,
    };
    for piece in lex(text)? {
        match piece {
            Piece::Text(literal) => translator.text(&literal),
            Piece::Action { source, tokens } => {
                let (start, buffer) = (translator.out.len(), translator.buffer);
                translator
                    .action(&source, &tokens)
                    .map_err(|reason| format!("{reason} in {source}"))?;
                if translator.buffer == buffer {
                    translator
                        .actions
                        .push((start..translator.out.len(), source));
                }
            }
        }
    }
    if let Some(open) = translator.blocks.last() {
        return Err(format!("missing {{{{ end }}}} for {}", open.source));
    }
    if let Some(missing) = translator.templates.iter().find(|t| !t.defined) {
        return Err(format!("no such template {:?}", missing.name));
    }
    let offset = translator.definitions.len();
    let mut actions = translator.definition_actions;
    actions.extend(
        translator
            .actions
            .into_iter()
            .map(|(range, source)| (range.start + offset..range.end + offset, source)),
    );
    Ok(Translation {
        defines_templates: !translator.templates.is_empty(),
        source: translator.definitions + &translator.out,
        actions,
    })
}

/// Rewrites a minijinja expression from an error message (`dot0['a']['b']`) in Go syntax (`.a.b`).
pub(crate) fn go_spelling(expression: &str) -> String {
    let chain = expression
        .replace("']['", ".")
        .replace("['", ".")
        .replace("']", "");
    if let Some(rest) = chain.strip_prefix("var_") {
        return format!("${}", rest.replacen(&format!(".{VALUE}"), "", 1));
    }
    match chain
        .strip_prefix("dot")
        .map(|rest| rest.trim_start_matches(|c: char| c.is_ascii_digit()))
    {
        Some("") => ".".to_string(),
        Some(rest) if rest.starts_with('.') => rest.to_string(),
        _ => chain,
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BlockKind {
    If,
    Range,
    With,
    /// The body of `define` or `block`.
    Define,
}

struct Block {
    kind: BlockKind,
    source: String,
    /// Whether this block set a new `.` that is still in effect (until `else` or `end`).
    dot_pushed: bool,
    seen_else: bool,
    /// For a definition: what it set aside, restored at its `end`.
    outside: Option<Box<Outside>>,
}

/// The translation state a definition's body sets aside: its macro starts afresh, with its
/// argument as `.` and `$` and no variables.
struct Outside {
    out: String,
    actions: Vec<(Range<usize>, String)>,
    dots: Vec<String>,
    scopes: Vec<Vec<(String, Holder)>>,
    root: String,
    /// `{% macro tpl_N(dotK) %}`.
    header: String,
}

/// How a Go variable is held in minijinja.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Holder {
    /// `var_x` itself: loop variables and those `if`/`with` declare.
    Plain,
    /// `var_x.flotilla_value` of a namespace: variables declared with `:=` on their own, which a
    /// `range` body may assign.
    Namespace,
}

/// A template named by `define`, `block` or `template`.
struct NamedTemplate {
    name: String,
    defined: bool,
}

struct Translator {
    out: String,
    actions: Vec<(Range<usize>, String)>,
    /// The minijinja name of `.`, innermost last.
    dots: Vec<String>,
    blocks: Vec<Block>,
    /// Declared Go variables, one scope per open block.
    scopes: Vec<Vec<(String, Holder)>>,
    counter: usize,
    /// The minijinja name of `$`: the root, or a definition's argument.
    root: String,
    /// Templates by index: macro `tpl_N` is `templates[N]`.
    templates: Vec<NamedTemplate>,
    /// The macros of finished definitions, placed before the text.
    definitions: String,
    definition_actions: Vec<(Range<usize>, String)>,
    /// Changes whenever `out` is swapped (a definition starts or ends).
    buffer: usize,
}

impl Translator {
    fn text(&mut self, literal: &str) {
        if literal.contains('{') {
            self.out.push_str("{{ ");
            self.out.push_str(&jinja_string(literal));
            self.out.push_str(" }}");
        } else {
            self.out.push_str(literal);
        }
    }

    fn dot(&self) -> &str {
        self.dots.last().map_or(ROOT, String::as_str)
    }

    fn fresh_dot(&mut self) -> String {
        self.counter += 1;
        format!("dot{}", self.counter)
    }

    /// Declares `name` as a plain minijinja variable (`range`, `if` and `with` variables).
    fn declare(&mut self, name: &str) {
        self.declare_as(name, Holder::Plain);
    }

    fn declare_as(&mut self, name: &str, holder: Holder) {
        if let Some(scope) = self.scopes.last_mut() {
            scope.push((name.to_string(), holder));
        }
    }

    /// How the innermost declaration of `name` holds its value, `None` when it is undeclared.
    fn variable(&self, name: &str) -> Option<Holder> {
        self.scopes
            .iter()
            .flatten()
            .rev()
            .find(|(declared, _)| declared == name)
            .map(|&(_, holder)| holder)
    }

    /// The minijinja expression of variable `name`'s value.
    fn variable_value(&self, name: &str) -> Result<String, String> {
        match self.variable(name) {
            Some(Holder::Plain) => Ok(format!("var_{name}")),
            Some(Holder::Namespace) => Ok(format!("var_{name}.{VALUE}")),
            None => Err(format!("undefined variable ${name}")),
        }
    }

    fn open(&mut self, kind: BlockKind, source: &str, dot_pushed: bool) {
        self.blocks.push(Block {
            kind,
            source: source.to_string(),
            dot_pushed,
            seen_else: false,
            outside: None,
        });
        self.scopes.push(Vec::new());
    }

    /// The index of template `name`, registering it on first mention.
    fn template(&mut self, name: &str) -> usize {
        if let Some(index) = self.templates.iter().position(|t| t.name == name) {
            return index;
        }
        self.templates.push(NamedTemplate {
            name: name.to_string(),
            defined: false,
        });
        self.templates.len() - 1
    }

    /// `{{ template "name" pipeline }}` (and the call a `block` makes).
    fn call_template(&mut self, name: &str, argument: &[Token]) -> Result<(), String> {
        let index = self.template(name);
        let value = if argument.is_empty() {
            "none".to_string()
        } else {
            self.pipeline_all(argument)?
        };
        let _ = write!(self.out, "{{{{ tpl_{index}({value}) }}}}");
        Ok(())
    }

    /// Starts the body of template `name`: a macro of its own, written aside.
    fn start_definition(&mut self, name: &str, source: &str) -> Result<(), String> {
        let index = self.template(name);
        if self.templates[index].defined {
            return Err(format!("template {name:?} is defined twice"));
        }
        self.templates[index].defined = true;
        let dot = self.fresh_dot();
        let outside = Outside {
            out: std::mem::take(&mut self.out),
            actions: std::mem::take(&mut self.actions),
            dots: std::mem::replace(&mut self.dots, vec![dot.clone()]),
            scopes: std::mem::replace(&mut self.scopes, vec![Vec::new()]),
            root: std::mem::replace(&mut self.root, dot.clone()),
            header: format!("{{% macro tpl_{index}({dot}) %}}"),
        };
        self.buffer += 1;
        self.blocks.push(Block {
            kind: BlockKind::Define,
            source: source.to_string(),
            dot_pushed: false,
            seen_else: false,
            outside: Some(Box::new(outside)),
        });
        Ok(())
    }

    /// Ends a definition: its macro joins the others, and the state it set aside comes back.
    fn end_definition(&mut self, outside: Outside) {
        let body = std::mem::replace(&mut self.out, outside.out);
        let actions = std::mem::replace(&mut self.actions, outside.actions);
        self.dots = outside.dots;
        self.scopes = outside.scopes;
        self.root = outside.root;
        let offset = self.definitions.len() + outside.header.len();
        self.definition_actions.extend(
            actions
                .into_iter()
                .map(|(range, source)| (range.start + offset..range.end + offset, source)),
        );
        self.definitions.push_str(&outside.header);
        self.definitions.push_str(&body);
        self.definitions.push_str("{% endmacro %}");
        self.buffer += 1;
    }

    /// Whether a `range` is open in the template being translated.
    fn in_range(&self) -> bool {
        self.blocks
            .iter()
            .rev()
            .take_while(|block| block.kind != BlockKind::Define)
            .any(|block| block.kind == BlockKind::Range)
    }

    fn action(&mut self, source: &str, tokens: &[Token]) -> Result<(), String> {
        let keyword = match tokens.first() {
            Some(Token::Ident(word)) => word.as_str(),
            None => return Err("empty action".into()),
            _ => "",
        };
        match keyword {
            "if" => {
                let (variable, condition) = self.declared_pipeline(&tokens[1..])?;
                let condition = match &variable {
                    Some(name) => {
                        let _ = write!(self.out, "{{% set var_{name} = {condition} %}}");
                        format!("var_{name}")
                    }
                    None => condition,
                };
                let _ = write!(self.out, "{{% if {condition} %}}");
                self.open(BlockKind::If, source, false);
                if let Some(name) = variable {
                    self.declare(&name);
                }
                Ok(())
            }
            "with" => {
                let (variable, value) = self.declared_pipeline(&tokens[1..])?;
                let dot = self.fresh_dot();
                // `set`, not minijinja's `with`: a `with` frame inside a loop would break `break`.
                let _ = write!(self.out, "{{% set {dot} = {value} %}}{{% if {dot} %}}");
                self.open(BlockKind::With, source, true);
                if let Some(name) = variable {
                    let _ = write!(self.out, "{{% set var_{name} = {dot} %}}");
                    self.declare(&name);
                }
                self.dots.push(dot);
                Ok(())
            }
            "range" => self.range(source, &tokens[1..]),
            "else" => self.else_branch(&tokens[1..]),
            "end" if tokens.len() == 1 => self.end(),
            "define" => match &tokens[1..] {
                _ if !self.blocks.is_empty() => {
                    Err("define is only allowed at the top level".into())
                }
                [Token::Str(name)] => self.start_definition(name, source),
                _ => Err("define needs a template name (a string) and nothing else".into()),
            },
            "block" => match &tokens[1..] {
                [Token::Str(name), argument @ ..] => {
                    let name = name.clone();
                    self.call_template(&name, argument)?;
                    self.start_definition(&name, source)
                }
                _ => Err("block needs a template name (a string)".into()),
            },
            "template" => match &tokens[1..] {
                [Token::Str(name), argument @ ..] => {
                    let name = name.clone();
                    self.call_template(&name, argument)
                }
                _ => Err("template needs a template name (a string)".into()),
            },
            "break" | "continue" if tokens.len() == 1 => {
                if !self.in_range() {
                    return Err(format!("{{{{{keyword}}}}} outside {{{{range}}}}"));
                }
                let _ = write!(self.out, "{{% {keyword} %}}");
                Ok(())
            }
            _ => match tokens {
                [
                    Token::Variable { name, chain },
                    Token::Declare | Token::Assign,
                    rest @ ..,
                ] if chain.is_empty() && !name.is_empty() => {
                    let value = self.pipeline_all(rest)?;
                    if matches!(tokens[1], Token::Declare) {
                        let _ = write!(
                            self.out,
                            "{{% set var_{name} = {VARIABLE}({VALUE}={value}) %}}"
                        );
                        self.declare_as(name, Holder::Namespace);
                        return Ok(());
                    }
                    match self.variable(name) {
                        None => Err(format!("undefined variable ${name}")),
                        Some(Holder::Namespace) => {
                            let _ = write!(self.out, "{{% set var_{name}.{VALUE} = {value} %}}");
                            Ok(())
                        }
                        Some(Holder::Plain) if self.in_range() => Err(format!(
                            "assigning to ${name}, a range, if or with variable, inside range is not supported"
                        )),
                        Some(Holder::Plain) => {
                            let _ = write!(self.out, "{{% set var_{name} = {value} %}}");
                            Ok(())
                        }
                    }
                }
                _ => {
                    let value = self.pipeline_all(tokens)?;
                    let _ = write!(self.out, "{{{{ {value} }}}}");
                    Ok(())
                }
            },
        }
    }

    /// A pipeline optionally preceded by `$name :=`, as `if` and `with` allow.
    fn declared_pipeline(&mut self, tokens: &[Token]) -> Result<(Option<String>, String), String> {
        match tokens {
            [Token::Variable { name, chain }, Token::Declare, rest @ ..]
                if chain.is_empty() && !name.is_empty() =>
            {
                Ok((Some(name.clone()), self.pipeline_all(rest)?))
            }
            _ => Ok((None, self.pipeline_all(tokens)?)),
        }
    }

    fn range(&mut self, source: &str, tokens: &[Token]) -> Result<(), String> {
        let variable = |token: &Token| match token {
            Token::Variable { name, chain } if chain.is_empty() && !name.is_empty() => {
                Some(name.clone())
            }
            _ => None,
        };
        let (key, value, rest) = match tokens {
            [a, Token::Comma, b, Token::Declare, rest @ ..] => match (variable(a), variable(b)) {
                (Some(k), Some(v)) => (Some(k), Some(v), rest),
                _ => return Err("malformed range variables".into()),
            },
            [a, Token::Declare, rest @ ..] => match variable(a) {
                Some(v) => (None, Some(v), rest),
                None => return Err("malformed range variable".into()),
            },
            _ => (None, None, tokens),
        };
        let collection = self.pipeline_all(rest)?;
        let dot = match &value {
            Some(name) => format!("var_{name}"),
            None => self.fresh_dot(),
        };
        match &key {
            Some(key) => {
                let _ = write!(
                    self.out,
                    "{{% for var_{key}, {dot} in {RANGE_PAIRS}({collection}) %}}"
                );
            }
            None => {
                let _ = write!(
                    self.out,
                    "{{% for {dot} in {RANGE_VALUES}({collection}) %}}"
                );
            }
        }
        self.open(BlockKind::Range, source, true);
        for name in key.iter().chain(&value) {
            self.declare(name);
        }
        self.dots.push(dot);
        Ok(())
    }

    fn else_branch(&mut self, tokens: &[Token]) -> Result<(), String> {
        let Some(block) = self
            .blocks
            .last_mut()
            .filter(|block| block.kind != BlockKind::Define)
        else {
            return Err("{{ else }} outside if, range or with".into());
        };
        if block.seen_else {
            return Err("more than one {{ else }} in a block".into());
        }
        let (kind, dot_pushed) = (block.kind, block.dot_pushed);
        block.dot_pushed = false;
        if dot_pushed {
            self.dots.pop();
        }
        match tokens {
            [] => {
                if let Some(block) = self.blocks.last_mut() {
                    block.seen_else = true;
                }
                self.out.push_str("{% else %}");
                Ok(())
            }
            [Token::Ident(word), rest @ ..] if word == "if" && kind == BlockKind::If => {
                let condition = self.pipeline_all(rest)?;
                let _ = write!(self.out, "{{% elif {condition} %}}");
                Ok(())
            }
            _ => Err("unsupported else form (only else and else if inside if)".into()),
        }
    }

    fn end(&mut self) -> Result<(), String> {
        let Some(block) = self.blocks.pop() else {
            return Err("{{ end }} without an open if, range, with, define or block".into());
        };
        if let Some(outside) = block.outside {
            self.end_definition(*outside);
            return Ok(());
        }
        self.scopes.pop();
        if block.dot_pushed {
            self.dots.pop();
        }
        self.out.push_str(match block.kind {
            BlockKind::Range => "{% endfor %}",
            BlockKind::If | BlockKind::With => "{% endif %}",
            BlockKind::Define => "",
        });
        Ok(())
    }

    /// Translates a whole pipeline; leftover tokens are an error.
    fn pipeline_all(&mut self, tokens: &[Token]) -> Result<String, String> {
        if tokens.is_empty() {
            return Err("missing value".into());
        }
        let mut parser = Parser {
            translator: self,
            tokens,
            pos: 0,
        };
        let expression = parser.pipeline()?;
        match parser.tokens.get(parser.pos) {
            None => Ok(expression),
            Some(token) => Err(format!("unexpected {}", describe(token))),
        }
    }
}

struct Parser<'t, 'k> {
    translator: &'t Translator,
    tokens: &'k [Token],
    pos: usize,
}

impl Parser<'_, '_> {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.pos)
    }

    fn pipeline(&mut self) -> Result<String, String> {
        let mut expression = self.command(None)?;
        while self.peek() == Some(&Token::Pipe) {
            self.pos += 1;
            expression = self.command(Some(expression))?;
        }
        Ok(expression)
    }

    fn at_command_end(&self) -> bool {
        matches!(self.peek(), None | Some(Token::Pipe | Token::Close))
    }

    fn command(&mut self, piped: Option<String>) -> Result<String, String> {
        if let Some(Token::Ident(name)) = self.peek() {
            let name = name.clone();
            self.pos += 1;
            let mut args = Vec::new();
            while !self.at_command_end() {
                args.push(self.operand()?);
            }
            args.extend(piped);
            return call(&name, &args);
        }
        if self.at_command_end() {
            return Err(match self.peek() {
                Some(token) => format!("missing value before {}", describe(token)),
                None => "missing value".into(),
            });
        }
        let operand = self.operand()?;
        if piped.is_some() {
            return Err(format!(
                "can't pipe into {operand}, which is not a function"
            ));
        }
        if !self.at_command_end() {
            return Err("arguments given to a value that is not a function".into());
        }
        Ok(operand)
    }

    fn operand(&mut self) -> Result<String, String> {
        let token = self.peek().cloned().ok_or("missing value")?;
        self.pos += 1;
        let translator = self.translator;
        let term = match token {
            Token::Dot => translator.dot().to_string(),
            Token::Field { chain, .. } => field(translator.dot(), &chain),
            Token::Variable { name, chain } if name.is_empty() => field(&translator.root, &chain),
            Token::Variable { name, chain } => field(&translator.variable_value(&name)?, &chain),
            Token::Str(text) => jinja_string(&text),
            Token::Int(n) => n.to_string(),
            Token::Float(f) => format!("{f:?}"),
            Token::Bool(b) => b.to_string(),
            Token::Nil => "none".to_string(),
            Token::Open => {
                let inner = self.pipeline()?;
                if self.peek() != Some(&Token::Close) {
                    return Err("unclosed parenthesis".into());
                }
                self.pos += 1;
                format!("({inner})")
            }
            Token::Ident(name) => call(&name, &[])?,
            other => return Err(format!("unexpected {}", describe(&other))),
        };
        match self.peek() {
            Some(Token::Field {
                chain,
                attached: true,
            }) => {
                let chain = chain.clone();
                self.pos += 1;
                Ok(field(&term, &chain))
            }
            _ => Ok(term),
        }
    }
}

/// `base["a"]["b"]`.
fn field(base: &str, chain: &[String]) -> String {
    let mut expression = base.to_string();
    for key in chain {
        expression.push('[');
        expression.push_str(&jinja_string(key));
        expression.push(']');
    }
    expression
}

/// A call of Go function `name` with translated `args`; `and`/`or`/`not` become operators.
fn call(name: &str, args: &[String]) -> Result<String, String> {
    match name {
        "and" | "or" if args.is_empty() => Err(format!("{name} needs at least one argument")),
        "and" | "or" => Ok(format!("({})", args.join(&format!(" {name} ")))),
        "not" if args.len() == 1 => Ok(format!("(not {})", args[0])),
        "not" => Err("not needs exactly one argument".into()),
        "if" | "else" | "end" | "range" | "with" | "define" | "template" | "block" | "break"
        | "continue" => Err(format!("unexpected keyword \"{name}\"")),
        _ if is_function(name) => Ok(format!("{name}({})", args.join(", "))),
        _ => Err(format!("unsupported function \"{name}\"")),
    }
}

fn describe(token: &Token) -> String {
    match token {
        Token::Pipe => "\"|\"".into(),
        Token::Close => "\")\"".into(),
        Token::Open => "\"(\"".into(),
        Token::Comma => "\",\"".into(),
        Token::Declare => "\":=\"".into(),
        Token::Assign => "\"=\"".into(),
        other => format!("{other:?}"),
    }
}

/// A minijinja string literal for `text`.
fn jinja_string(text: &str) -> String {
    go_format::quote(text, go_format::QuoteStyle::Jinja)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn translations_read_as_expected() {
        let cases = [
            ("a{{ .x }}", r#"a{{ dot0["x"] }}"#),
            (
                "{{ .x | default \"y\" }}",
                r#"{{ default("y", dot0["x"]) }}"#,
            ),
            (
                "{{ and .a (not .b) }}",
                r#"{{ (dot0["a"] and ((not dot0["b"]))) }}"#,
            ),
            ("{% raw %}", r#"{{ "{% raw %}" }}"#),
        ];
        for (go, jinja) in cases {
            assert_eq!(translate(go).unwrap().source, jinja, "{go}");
        }
    }

    #[test]
    fn actions_are_located_in_the_translation() {
        let translation = translate("ab{{ .x }}cd").unwrap();
        assert_eq!(translation.action_at(4), Some("{{ .x }}"));
        assert_eq!(translation.action_at(0), None);
    }

    #[test]
    fn go_spelling_of_minijinja_expressions() {
        assert_eq!(go_spelling("dot0['a']['b']"), ".a.b");
        assert_eq!(go_spelling("dot3"), ".");
        assert_eq!(go_spelling("var_x['y']"), "$x.y");
    }

    #[test]
    fn unsupported_and_malformed_constructs_are_named() {
        let cases = [
            (
                "{{ .x | md5sum }}",
                "unsupported function \"md5sum\" in {{ .x | md5sum }}",
            ),
            ("{{ template \"x\" }}", "no such template \"x\""),
            (
                "{{ if true }}{{ define \"x\" }}{{ end }}{{ end }}",
                "define is only allowed at the top level",
            ),
            (
                "{{ define \"x\" }}a{{ end }}{{ define \"x\" }}b{{ end }}",
                "template \"x\" is defined twice",
            ),
            ("{{ break }}", "{{break}} outside {{range}}"),
            (
                "{{ range .l }}{{ define \"x\" }}{{ end }}{{ end }}",
                "define is only allowed at the top level",
            ),
            ("{{ if .a }}x", "missing {{ end }} for {{ if .a }}"),
            ("x{{ end }}", "{{ end }} without an open if"),
            ("{{ else }}", "{{ else }} outside if"),
            ("{{ $y }}", "undefined variable $y in {{ $y }}"),
            (
                "{{ .a .b }}",
                "arguments given to a value that is not a function",
            ),
            ("{{ .a | .b }}", "not a function"),
            ("{{ (lower .a }}", "unclosed parenthesis"),
            ("{{ }}", "empty action"),
            ("{{ lower | }}", "missing value"),
            (
                "{{ range .l }}{{ else if .x }}{{ end }}",
                "unsupported else form",
            ),
            (
                "{{ range $x := .l }}{{ range .l }}{{ $x = 2 }}{{ end }}{{ end }}",
                "inside range is not supported",
            ),
        ];
        for (go, expected) in cases {
            let error = translate(go).unwrap_err();
            assert!(error.contains(expected), "{go}: {error}");
        }
    }
}
