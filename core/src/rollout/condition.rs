//! Small boolean expressions, parsed once and evaluated many times: the conditions of a metric
//! analysis (`successCondition`, `failureCondition`, over a measurement's `result`) and the
//! `when` and `oncePer` of notification triggers (over an Application, `app`, with Argo CD's
//! `time` helpers). Each use is a [`Language`]: the names its expressions start from, whether
//! the `time` helpers exist, and how a field that is absent reads.
//!
//! The grammar (whitespace between tokens is free):
//!
//! ```text
//! condition  := or
//! or         := and ( ("||" | "or") and )*
//! and        := not ( ("&&" | "and") not )*
//! not        := ("!" | "not") not | comparison
//! comparison := product ( ("<" | "<=" | ">" | ">=" | "==" | "!=" | "in" | "not in") product )?
//! product    := postfix ( "*" postfix )*
//! postfix    := primary ( ("." | "?.") name | "[" (digits | string) "]" | method )*
//! primary    := number | string | "true" | "false" | "null" | "nil" | "[" list "]"
//!             | "(" or ")" | root | "len(" or ")" | "time.Parse(" or ")" | "time.Now()"
//!             | "time.Second" | "time.Minute" | "time.Hour"
//! method     := ".Add(" or ")" | ".Sub(" or ")" | ".Before(" or ")" | ".After(" or ")"
//!             | ".Seconds()" | ".Minutes()" | ".Hours()"
//! ```
//!
//! Numbers are decimal (`0.01`, `-3`, `1e-3`); strings are quoted with `"` or `'`. Two numbers
//! compare as numbers, two strings as text, two times and two durations as such; `==` and `!=`
//! compare any two values (of different types: unequal); `x in [a, b]` is whether `x` equals
//! one of them. In a language whose absent fields read as `nil` (the notification triggers, as
//! in expr-lang), `a.b` of an object without `b` is `nil`, a field of `nil` is an error, and
//! `a?.b` is `nil` — and so is the rest of the chain — when `a` is `nil`. An ordering of
//! anything else, an element or field that does not exist (where absence is not `nil`), or an
//! operand alone that is not a boolean is an evaluation error, never a guess; a name or function
//! outside the grammar is refused when the text is parsed.

use std::cmp::Ordering;
use std::fmt;

use jiff::{SignedDuration, Timestamp};
use serde_json::Value;

/// The names an expression may start from, and how it reads what is absent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Language {
    /// The variables (`result`, `app`).
    pub roots: &'static [&'static str],
    /// Whether `time.Parse`, `time.Now` and the durations exist.
    pub time: bool,
    /// Whether an absent field reads as `nil` (else it is an error).
    pub absent_is_nil: bool,
    /// What an operand may be, in errors.
    pub expected: &'static str,
}

/// Metric analyses' conditions: over `result`; an absent element is an error.
pub const METRIC: Language = Language {
    roots: &["result"],
    time: false,
    absent_is_nil: false,
    expected: "a number, a string, true, false, null, result or len(result)",
};

/// Notification triggers' `when` and `oncePer`: over `app` (and `appProject` when there is
/// one), with the `time` helpers; an absent field is `nil`.
pub const TRIGGER: Language = Language {
    roots: &["app", "appProject"],
    time: true,
    absent_is_nil: true,
    expected: "a number, a string, true, false, nil, a list, app, appProject, time.Parse(…), time.Now() or len(…)",
};

/// A parsed condition, with the text it was written as.
#[derive(Clone, Debug, PartialEq)]
pub struct Condition {
    text: String,
    language: Language,
    expression: Expression,
}

// Conditions hold f64 literals, never NaN (the parser reads only finite decimals).
impl Eq for Condition {}

/// Why a condition's text is not a condition.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{text:?} at character {position}: {problem}")]
pub struct ConditionError {
    pub text: String,
    /// 1-based.
    pub position: usize,
    pub problem: String,
}

/// Why a condition could not be evaluated against a result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct EvaluationError(String);

/// What an expression is evaluated against: its roots' values and the time `time.Now()` is.
#[derive(Clone, Copy, Debug)]
pub struct Scope<'a> {
    /// The value of each root, by name (a root not here is `nil`).
    pub roots: &'a [(&'a str, &'a Value)],
    pub now: Timestamp,
}

#[derive(Clone, Debug, PartialEq)]
enum Expression {
    Or(Box<Self>, Box<Self>),
    And(Box<Self>, Box<Self>),
    Not(Box<Self>),
    Compare(Box<Self>, Comparison, Box<Self>),
    In(Box<Self>, Box<Self>),
    Times(Box<Self>, Box<Self>),
    Literal(Value),
    List(Vec<Self>),
    Root(String),
    Field {
        of: Box<Self>,
        name: String,
        optional: bool,
    },
    Index {
        of: Box<Self>,
        index: Index,
        optional: bool,
    },
    Len(Box<Self>),
    Parse(Box<Self>),
    Now,
    Unit(SignedDuration),
    Method(Box<Self>, Method, Option<Box<Self>>),
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Index {
    Position(usize),
    Key(String),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Method {
    Add,
    Sub,
    Before,
    After,
    Seconds,
    Minutes,
    Hours,
}

impl Method {
    const ALL: [(&'static str, Self, bool); 7] = [
        ("Add", Self::Add, true),
        ("Sub", Self::Sub, true),
        ("Before", Self::Before, true),
        ("After", Self::After, true),
        ("Seconds", Self::Seconds, false),
        ("Minutes", Self::Minutes, false),
        ("Hours", Self::Hours, false),
    ];

    fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(_, m, _)| *m == self)
            .map_or("", |(name, _, _)| name)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Comparison {
    Less,
    LessOrEqual,
    Greater,
    GreaterOrEqual,
    Equal,
    NotEqual,
}

/// A value while evaluating: JSON, or a time or duration of the `time` helpers.
#[derive(Clone, Debug, PartialEq)]
enum Val {
    Json(Value),
    Time(Timestamp),
    Duration(SignedDuration),
}

impl fmt::Display for Val {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Json(value) => write!(f, "{value}"),
            Self::Time(time) => write!(f, "time {time}"),
            Self::Duration(duration) => write!(f, "duration {duration:#}"),
        }
    }
}

fn fail<T>(message: String) -> Result<T, EvaluationError> {
    Err(EvaluationError(message))
}

impl Condition {
    /// Parses `text` as a metric condition ([`METRIC`]).
    ///
    /// # Errors
    /// Text that does not follow the grammar, with the character where it stops following it.
    pub fn parse(text: &str) -> Result<Self, ConditionError> {
        Self::parse_in(text, METRIC)
    }

    /// Parses `text` in `language`.
    ///
    /// # Errors
    /// Text that does not follow the grammar or names what `language` does not have, with the
    /// character where it stops following it.
    pub fn parse_in(text: &str, language: Language) -> Result<Self, ConditionError> {
        let mut parser = Parser {
            text,
            language,
            tokens: tokenize(text)?,
            next: 0,
        };
        let expression = parser.or()?;
        if let Some(token) = parser.tokens.get(parser.next) {
            return Err(parser.error_at(token.at, "expected the end, || or &&"));
        }
        Ok(Self {
            text: text.to_owned(),
            language,
            expression,
        })
    }

    /// The text it was written as.
    #[must_use]
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Whether `result` satisfies it (a metric condition).
    ///
    /// # Errors
    /// An element or field that does not exist, an ordering of values that are not both numbers
    /// or both strings, an operand alone that is not a boolean.
    pub fn evaluate(&self, result: &Value) -> Result<bool, EvaluationError> {
        self.holds(Scope {
            roots: &[("result", result)],
            now: Timestamp::UNIX_EPOCH,
        })
    }

    /// Whether it holds in `scope`.
    ///
    /// # Errors
    /// As [`Condition::evaluate`]; and a time that does not parse, a field of `nil`.
    pub fn holds(&self, scope: Scope<'_>) -> Result<bool, EvaluationError> {
        self.expression.boolean(&self.evaluator(scope))
    }

    /// Its value in `scope` as text (`nil` is empty; a string is itself; anything else JSON),
    /// as `oncePer` is used.
    ///
    /// # Errors
    /// As [`Condition::holds`].
    pub fn text_value(&self, scope: Scope<'_>) -> Result<String, EvaluationError> {
        Ok(match self.expression.value(&self.evaluator(scope))? {
            Val::Json(Value::Null) => String::new(),
            Val::Json(Value::String(text)) => text,
            other => other.to_string(),
        })
    }

    fn evaluator<'a>(&self, scope: Scope<'a>) -> Evaluator<'a> {
        Evaluator {
            scope,
            absent_is_nil: self.language.absent_is_nil,
        }
    }
}

impl fmt::Display for Condition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

struct Evaluator<'a> {
    scope: Scope<'a>,
    absent_is_nil: bool,
}

impl Expression {
    fn boolean(&self, at: &Evaluator<'_>) -> Result<bool, EvaluationError> {
        match self {
            Self::Or(a, b) => Ok(a.boolean(at)? || b.boolean(at)?),
            Self::And(a, b) => Ok(a.boolean(at)? && b.boolean(at)?),
            Self::Not(a) => Ok(!a.boolean(at)?),
            _ => match self.value(at)? {
                Val::Json(Value::Bool(b)) => Ok(b),
                other => fail(format!("{} is {other}, not a boolean", self.describe())),
            },
        }
    }

    /// Its value; `nil` when an optional step met `nil`.
    fn value(&self, at: &Evaluator<'_>) -> Result<Val, EvaluationError> {
        Ok(self.chain(at)?.unwrap_or(Val::Json(Value::Null)))
    }

    /// Its value, `None` when an optional step (`?.`) of its chain met `nil`.
    fn chain(&self, at: &Evaluator<'_>) -> Result<Option<Val>, EvaluationError> {
        let json = |value: Value| Ok(Some(Val::Json(value)));
        match self {
            Self::Or(..) | Self::And(..) | Self::Not(..) => json(Value::Bool(self.boolean(at)?)),
            Self::Compare(a, comparison, b) => json(Value::Bool(compare(
                &a.value(at)?,
                *comparison,
                &b.value(at)?,
            )?)),
            Self::In(a, b) => {
                let needle = a.value(at)?;
                match b.value(at)? {
                    Val::Json(Value::Array(items)) => json(Value::Bool(
                        items.into_iter().any(|item| Val::Json(item) == needle),
                    )),
                    other => fail(format!("{}: {other} is not a list", b.describe())),
                }
            }
            Self::Times(a, b) => match (a.value(at)?, b.value(at)?) {
                (Val::Json(Value::Number(x)), Val::Json(Value::Number(y))) => json(
                    serde_json::Number::from_f64(
                        x.as_f64().unwrap_or(0.0) * y.as_f64().unwrap_or(0.0),
                    )
                    .map_or(Value::Null, Value::Number),
                ),
                (Val::Json(Value::Number(n)), Val::Duration(d))
                | (Val::Duration(d), Val::Json(Value::Number(n))) => {
                    Ok(Some(Val::Duration(d.mul_f64(n.as_f64().unwrap_or(0.0)))))
                }
                (x, y) => fail(format!("cannot multiply {x} and {y}")),
            },
            Self::Literal(value) => json(value.clone()),
            Self::List(items) => json(Value::Array(
                items
                    .iter()
                    .map(|item| match item.value(at)? {
                        Val::Json(value) => Ok(value),
                        other => fail(format!("{other} cannot be in a list")),
                    })
                    .collect::<Result<_, _>>()?,
            )),
            Self::Root(name) => json(
                at.scope
                    .roots
                    .iter()
                    .find(|(root, _)| root == name)
                    .map_or(Value::Null, |(_, value)| (*value).clone()),
            ),
            Self::Field { of, optional, .. } | Self::Index { of, optional, .. } => {
                let Some(parent) = of.chain(at)? else {
                    return Ok(None);
                };
                match parent {
                    Val::Json(Value::Null) if *optional => Ok(None),
                    Val::Json(Value::Null) if at.absent_is_nil => fail(format!(
                        "{} is nil: {} cannot be read (write ?. to read nil instead)",
                        of.describe(),
                        self.describe()
                    )),
                    Val::Json(parent) => {
                        let found = match self {
                            Self::Field { name, .. } => parent.as_object().map(|f| f.get(name)),
                            Self::Index {
                                index: Index::Key(key),
                                ..
                            } => parent.as_object().map(|f| f.get(key)),
                            Self::Index {
                                index: Index::Position(i),
                                ..
                            } => parent.as_array().map(|items| items.get(*i)),
                            _ => None,
                        };
                        match found {
                            Some(Some(value)) => json(value.clone()),
                            Some(None) if at.absent_is_nil && parent.is_object() => {
                                json(Value::Null)
                            }
                            _ => {
                                let quoted: String = parent.to_string().chars().take(80).collect();
                                fail(format!(
                                    "{} does not exist ({} is {quoted})",
                                    self.describe(),
                                    of.describe()
                                ))
                            }
                        }
                    }
                    other => fail(format!("{}: {other} has no fields", self.describe())),
                }
            }
            Self::Len(of) => match of.value(at)? {
                Val::Json(Value::Array(items)) => json(Value::from(items.len())),
                Val::Json(Value::Object(fields)) => json(Value::from(fields.len())),
                Val::Json(Value::String(text)) => json(Value::from(text.chars().count())),
                other => fail(format!("{}: {other} has no length", self.describe())),
            },
            Self::Parse(of) => match of.value(at)? {
                Val::Json(Value::String(text)) => match text.parse::<Timestamp>() {
                    Ok(time) => Ok(Some(Val::Time(time))),
                    Err(error) => fail(format!(
                        "{}: {text:?} is not a time: {error}",
                        self.describe()
                    )),
                },
                other => fail(format!("{}: {other} is not a time", self.describe())),
            },
            Self::Now => Ok(Some(Val::Time(at.scope.now))),
            Self::Unit(duration) => Ok(Some(Val::Duration(*duration))),
            Self::Method(of, method, argument) => {
                let Some(receiver) = of.chain(at)? else {
                    return Ok(None);
                };
                let argument = argument.as_ref().map(|a| a.value(at)).transpose()?;
                let unit = |d: SignedDuration, per: f64| {
                    json(
                        serde_json::Number::from_f64(d.as_secs_f64() / per)
                            .map_or(Value::Null, Value::Number),
                    )
                };
                match (method, receiver, argument) {
                    (Method::Add, Val::Time(t), Some(Val::Duration(d))) => t
                        .checked_add(d)
                        .map(|t| Some(Val::Time(t)))
                        .map_err(|e| EvaluationError(format!("{}: {e}", self.describe()))),
                    (Method::Sub, Val::Time(t), Some(Val::Time(u))) => {
                        Ok(Some(Val::Duration(t.duration_since(u))))
                    }
                    (Method::Before, Val::Time(t), Some(Val::Time(u))) => json(Value::Bool(t < u)),
                    (Method::After, Val::Time(t), Some(Val::Time(u))) => json(Value::Bool(t > u)),
                    (Method::Seconds, Val::Duration(d), None) => unit(d, 1.0),
                    (Method::Minutes, Val::Duration(d), None) => unit(d, 60.0),
                    (Method::Hours, Val::Duration(d), None) => unit(d, 3600.0),
                    (_, receiver, argument) => fail(format!(
                        "{}: .{}() does not apply to {receiver}{}",
                        self.describe(),
                        method.name(),
                        argument.map(|a| format!(" and {a}")).unwrap_or_default()
                    )),
                }
            }
        }
    }

    /// How it reads in an error.
    fn describe(&self) -> String {
        match self {
            Self::Literal(value) => value.to_string(),
            Self::Root(name) => name.clone(),
            Self::Field { of, name, optional } => {
                format!(
                    "{}{}{name}",
                    of.describe(),
                    if *optional { "?." } else { "." }
                )
            }
            Self::Index {
                of,
                index,
                optional,
            } => {
                let optional = if *optional { "?." } else { "" };
                match index {
                    Index::Position(i) => format!("{}{optional}[{i}]", of.describe()),
                    Index::Key(key) => format!("{}{optional}[{key:?}]", of.describe()),
                }
            }
            Self::Len(of) => format!("len({})", of.describe()),
            Self::Parse(of) => format!("time.Parse({})", of.describe()),
            Self::Now => "time.Now()".to_owned(),
            Self::Unit(d) => format!("{d:#}"),
            Self::Method(of, method, argument) => format!(
                "{}.{}({})",
                of.describe(),
                method.name(),
                argument.as_ref().map(|a| a.describe()).unwrap_or_default()
            ),
            Self::List(items) => format!(
                "[{}]",
                items
                    .iter()
                    .map(Self::describe)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            _ => "the expression".to_owned(),
        }
    }
}

/// `left <comparison> right`.
fn compare(left: &Val, comparison: Comparison, right: &Val) -> Result<bool, EvaluationError> {
    let ordering = match (left, right) {
        (Val::Json(Value::Number(x)), Val::Json(Value::Number(y))) => x
            .as_f64()
            .zip(y.as_f64())
            .and_then(|(x, y)| x.partial_cmp(&y)),
        (Val::Json(Value::String(x)), Val::Json(Value::String(y))) => Some(x.cmp(y)),
        (Val::Time(x), Val::Time(y)) => Some(x.cmp(y)),
        (Val::Duration(x), Val::Duration(y)) => Some(x.cmp(y)),
        _ => None,
    };
    match (comparison, ordering) {
        (Comparison::Equal, Some(o)) => Ok(o == Ordering::Equal),
        (Comparison::NotEqual, Some(o)) => Ok(o != Ordering::Equal),
        (Comparison::Equal, None) => Ok(left == right),
        (Comparison::NotEqual, None) => Ok(left != right),
        (Comparison::Less, Some(o)) => Ok(o == Ordering::Less),
        (Comparison::LessOrEqual, Some(o)) => Ok(o != Ordering::Greater),
        (Comparison::Greater, Some(o)) => Ok(o == Ordering::Greater),
        (Comparison::GreaterOrEqual, Some(o)) => Ok(o != Ordering::Less),
        (_, None) => fail(format!(
            "cannot order {left} and {right} (both must be numbers or both strings)"
        )),
    }
}

#[derive(Clone, Debug, PartialEq)]
enum Kind {
    Number(f64),
    Text(String),
    Name(String),
    Symbol(&'static str),
}

#[derive(Clone, Debug, PartialEq)]
struct Token {
    kind: Kind,
    /// 1-based character position.
    at: usize,
}

/// The symbols, longest first.
const SYMBOLS: [&str; 17] = [
    "<=", ">=", "==", "!=", "&&", "||", "?.", "<", ">", "!", "(", ")", "[", "]", ".", ",", "*",
];

fn tokenize(text: &str) -> Result<Vec<Token>, ConditionError> {
    let chars: Vec<char> = text.chars().collect();
    let error = |at: usize, problem: &str| ConditionError {
        text: text.to_owned(),
        position: at + 1,
        problem: problem.to_owned(),
    };
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let at = i + 1;
        if c.is_whitespace() {
            i += 1;
        } else if c.is_ascii_digit()
            || (c == '-' && chars.get(i + 1).is_some_and(char::is_ascii_digit))
        {
            let start = i;
            i += 1;
            while i < chars.len()
                && (chars[i].is_ascii_digit()
                    || chars[i] == '.'
                    || chars[i] == 'e'
                    || chars[i] == 'E'
                    || ((chars[i] == '-' || chars[i] == '+') && matches!(chars[i - 1], 'e' | 'E')))
            {
                i += 1;
            }
            let literal: String = chars[start..i].iter().collect();
            let number = literal
                .parse::<f64>()
                .ok()
                .filter(|n| n.is_finite())
                .ok_or_else(|| error(start, &format!("{literal:?} is not a number")))?;
            tokens.push(Token {
                kind: Kind::Number(number),
                at,
            });
        } else if c == '"' || c == '\'' {
            let end = chars[i + 1..]
                .iter()
                .position(|&d| d == c)
                .ok_or_else(|| error(i, "a string that is never closed"))?;
            tokens.push(Token {
                kind: Kind::Text(chars[i + 1..i + 1 + end].iter().collect()),
                at,
            });
            i += end + 2;
        } else if c.is_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            tokens.push(Token {
                kind: Kind::Name(chars[start..i].iter().collect()),
                at,
            });
        } else {
            let rest: String = chars[i..chars.len().min(i + 2)].iter().collect();
            let symbol = SYMBOLS
                .iter()
                .find(|s| rest.starts_with(**s))
                .ok_or_else(|| error(i, &format!("unexpected {c:?}")))?;
            i += symbol.chars().count();
            tokens.push(Token {
                kind: Kind::Symbol(symbol),
                at,
            });
        }
    }
    Ok(tokens)
}

struct Parser<'a> {
    text: &'a str,
    language: Language,
    tokens: Vec<Token>,
    next: usize,
}

impl Parser<'_> {
    fn error_at(&self, at: usize, problem: &str) -> ConditionError {
        ConditionError {
            text: self.text.to_owned(),
            position: at,
            problem: problem.to_owned(),
        }
    }

    /// An error where the next token is (or just after the end).
    fn error(&self, problem: &str) -> ConditionError {
        let at = self
            .tokens
            .get(self.next)
            .map_or_else(|| self.text.chars().count() + 1, |t| t.at);
        self.error_at(at, problem)
    }

    fn peek(&self) -> Option<&Kind> {
        self.tokens.get(self.next).map(|t| &t.kind)
    }

    fn peek_name(&self, offset: usize) -> Option<&str> {
        match self.tokens.get(self.next + offset).map(|t| &t.kind) {
            Some(Kind::Name(name)) => Some(name),
            _ => None,
        }
    }

    /// Takes the next token when it is one of `symbols` or the word `word`.
    fn eat(&mut self, symbols: &[&str], word: Option<&str>) -> bool {
        let found = match self.peek() {
            Some(Kind::Symbol(s)) => symbols.contains(s),
            Some(Kind::Name(name)) => Some(name.as_str()) == word,
            _ => false,
        };
        if found {
            self.next += 1;
        }
        found
    }

    fn expect(&mut self, symbol: &str) -> Result<(), ConditionError> {
        if self.eat(&[symbol], None) {
            Ok(())
        } else {
            Err(self.error(&format!("expected {symbol}")))
        }
    }

    /// A name after `.` or `?.`.
    fn name(&mut self) -> Result<String, ConditionError> {
        match self.peek() {
            Some(Kind::Name(name)) => {
                let name = name.clone();
                self.next += 1;
                Ok(name)
            }
            _ => Err(self.error("expected a field name")),
        }
    }

    fn or(&mut self) -> Result<Expression, ConditionError> {
        let mut left = self.and()?;
        while self.eat(&["||"], Some("or")) {
            left = Expression::Or(Box::new(left), Box::new(self.and()?));
        }
        Ok(left)
    }

    fn and(&mut self) -> Result<Expression, ConditionError> {
        let mut left = self.not()?;
        while self.eat(&["&&"], Some("and")) {
            left = Expression::And(Box::new(left), Box::new(self.not()?));
        }
        Ok(left)
    }

    fn not(&mut self) -> Result<Expression, ConditionError> {
        if self.eat(&["!"], Some("not")) {
            return Ok(Expression::Not(Box::new(self.not()?)));
        }
        let left = self.product()?;
        if self.peek_name(0) == Some("in") {
            self.next += 1;
            return Ok(Expression::In(Box::new(left), Box::new(self.product()?)));
        }
        if self.peek_name(0) == Some("not") && self.peek_name(1) == Some("in") {
            self.next += 2;
            let inside = Expression::In(Box::new(left), Box::new(self.product()?));
            return Ok(Expression::Not(Box::new(inside)));
        }
        let comparison = match self.peek() {
            Some(Kind::Symbol("<")) => Comparison::Less,
            Some(Kind::Symbol("<=")) => Comparison::LessOrEqual,
            Some(Kind::Symbol(">")) => Comparison::Greater,
            Some(Kind::Symbol(">=")) => Comparison::GreaterOrEqual,
            Some(Kind::Symbol("==")) => Comparison::Equal,
            Some(Kind::Symbol("!=")) => Comparison::NotEqual,
            _ => return Ok(left),
        };
        self.next += 1;
        let right = self.product()?;
        Ok(Expression::Compare(
            Box::new(left),
            comparison,
            Box::new(right),
        ))
    }

    fn product(&mut self) -> Result<Expression, ConditionError> {
        let mut left = self.postfix()?;
        while self.eat(&["*"], None) {
            left = Expression::Times(Box::new(left), Box::new(self.postfix()?));
        }
        Ok(left)
    }

    fn postfix(&mut self) -> Result<Expression, ConditionError> {
        let mut value = self.primary()?;
        loop {
            let optional = self.eat(&["?."], None);
            if self.eat(&["["], None) {
                let index = match self.peek().cloned() {
                    Some(Kind::Number(n)) if n.fract() == 0.0 && (0.0..1e9).contains(&n) => {
                        #[allow(
                            clippy::cast_possible_truncation,
                            clippy::cast_sign_loss,
                            reason = "a whole number between 0 and 1e9"
                        )]
                        let position = n as usize;
                        Index::Position(position)
                    }
                    Some(Kind::Text(key)) if self.language.absent_is_nil => Index::Key(key),
                    _ => return Err(self.error("expected an index (0, 1, ...)")),
                };
                self.next += 1;
                self.expect("]")?;
                value = Expression::Index {
                    of: Box::new(value),
                    index,
                    optional,
                };
            } else if optional || self.eat(&["."], None) {
                let at = self.next;
                let name = self.name()?;
                if self.eat(&["("], None) {
                    let Some((_, method, takes)) =
                        Method::ALL.iter().find(|(n, _, _)| *n == name).copied()
                    else {
                        return Err(self.error_at(
                            self.tokens[at].at,
                            &format!(
                                "unknown function {name:?} (functions: Add, Sub, Before, After, Seconds, Minutes, Hours)"
                            ),
                        ));
                    };
                    let argument = if takes {
                        Some(Box::new(self.or()?))
                    } else {
                        None
                    };
                    self.expect(")")?;
                    value = Expression::Method(Box::new(value), method, argument);
                } else {
                    value = Expression::Field {
                        of: Box::new(value),
                        name,
                        optional,
                    };
                }
            } else {
                return Ok(value);
            }
        }
    }

    fn primary(&mut self) -> Result<Expression, ConditionError> {
        let expected = format!("expected {}", self.language.expected);
        let Some(token) = self.tokens.get(self.next).cloned() else {
            return Err(self.error(&expected));
        };
        self.next += 1;
        match token.kind {
            Kind::Number(n) => Ok(Expression::Literal(
                serde_json::Number::from_f64(n).map_or(Value::Null, Value::Number),
            )),
            Kind::Text(text) => Ok(Expression::Literal(Value::String(text))),
            Kind::Symbol("(") => {
                let inner = self.or()?;
                self.expect(")")?;
                Ok(inner)
            }
            Kind::Symbol("[") if self.language.absent_is_nil => {
                let mut items = Vec::new();
                if !self.eat(&["]"], None) {
                    loop {
                        items.push(self.or()?);
                        if self.eat(&["]"], None) {
                            break;
                        }
                        self.expect(",")?;
                    }
                }
                Ok(Expression::List(items))
            }
            Kind::Name(name) => match name.as_str() {
                "true" => Ok(Expression::Literal(Value::Bool(true))),
                "false" => Ok(Expression::Literal(Value::Bool(false))),
                "null" => Ok(Expression::Literal(Value::Null)),
                "nil" if self.language.absent_is_nil => Ok(Expression::Literal(Value::Null)),
                "len" => {
                    self.expect("(")?;
                    let inner = self.or()?;
                    self.expect(")")?;
                    Ok(Expression::Len(Box::new(inner)))
                }
                "time" if self.language.time => self.time(),
                root if self.language.roots.contains(&root) => Ok(Expression::Root(name)),
                _ => Err(self.error_at(token.at, &format!("unknown name {name:?}; {expected}"))),
            },
            Kind::Symbol(_) => Err(self.error_at(token.at, &expected)),
        }
    }

    /// What follows `time`.
    fn time(&mut self) -> Result<Expression, ConditionError> {
        self.expect(".")?;
        let at = self.tokens.get(self.next).map_or(0, |t| t.at);
        let name = self.name()?;
        match name.as_str() {
            "Parse" => {
                self.expect("(")?;
                let inner = self.or()?;
                self.expect(")")?;
                Ok(Expression::Parse(Box::new(inner)))
            }
            "Now" => {
                self.expect("(")?;
                self.expect(")")?;
                Ok(Expression::Now)
            }
            "Second" => Ok(Expression::Unit(SignedDuration::from_secs(1))),
            "Minute" => Ok(Expression::Unit(SignedDuration::from_mins(1))),
            "Hour" => Ok(Expression::Unit(SignedDuration::from_hours(1))),
            _ => Err(self.error_at(
                at,
                &format!(
                    "unknown function time.{name} (supported: time.Parse, time.Now, time.Second, time.Minute, time.Hour)"
                ),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn holds(text: &str, result: &Value) -> Result<bool, EvaluationError> {
        Condition::parse(text)
            .unwrap_or_else(|e| panic!("{e}"))
            .evaluate(result)
    }

    #[test]
    fn comparisons_over_the_result() {
        let rate = json!([0.004]);
        assert_eq!(holds("result[0] < 0.01", &rate), Ok(true));
        assert_eq!(holds("result[0] >= 0.95", &rate), Ok(false));
        assert_eq!(holds("result[0]<=0.004", &rate), Ok(true));
        assert_eq!(holds("result[0] > -1 && result[0] != 0", &rate), Ok(true));
        assert_eq!(holds("result[0] == 1 || len(result) == 1", &rate), Ok(true));
        assert_eq!(holds("not (result[0] < 1e-3)", &rate), Ok(true));
        assert_eq!(holds("!(result[0] < 1E-2) or false", &rate), Ok(false));
        let web = json!({"status": {"phase": "Ready", "ok": true, "checks": [1, 2]}});
        assert_eq!(holds("result.status.phase == 'Ready'", &web), Ok(true));
        assert_eq!(holds("result.status.phase != \"Ready\"", &web), Ok(false));
        assert_eq!(holds("result.status.ok", &web), Ok(true));
        assert_eq!(holds("result.status.ok == 1", &web), Ok(false));
        assert_eq!(holds("len(result.status.checks) >= 2", &web), Ok(true));
        assert_eq!(holds("result.status.checks[1] == 2", &web), Ok(true));
        assert_eq!(holds("result == null", &Value::Null), Ok(true));
    }

    #[test]
    fn and_binds_tighter_than_or() {
        let r = json!([1]);
        assert_eq!(holds("true || true && false", &r), Ok(true));
        assert_eq!(holds("(true || true) && false", &r), Ok(false));
        assert_eq!(holds("not false and false", &r), Ok(false));
    }

    #[test]
    fn what_cannot_be_evaluated_is_an_error_not_a_guess() {
        assert_eq!(
            holds("result[0] < 0.01", &json!([]))
                .unwrap_err()
                .to_string(),
            "result[0] does not exist (result is [])"
        );
        assert_eq!(
            holds("result.a.b", &json!({"a": {}}))
                .unwrap_err()
                .to_string(),
            "result.a.b does not exist (result.a is {})"
        );
        assert_eq!(
            holds("result[0] < 'x'", &json!([1]))
                .unwrap_err()
                .to_string(),
            "cannot order 1 and \"x\" (both must be numbers or both strings)"
        );
        assert_eq!(
            holds("result[0]", &json!([1])).unwrap_err().to_string(),
            "result[0] is 1, not a boolean"
        );
        assert_eq!(
            holds("result[0] < 1", &json!([null]))
                .unwrap_err()
                .to_string(),
            "cannot order null and 1.0 (both must be numbers or both strings)"
        );
    }

    #[test]
    fn bad_text_is_refused_at_its_character() {
        let refused = |text: &str| Condition::parse(text).unwrap_err().to_string();
        assert_eq!(
            refused("result[0] <"),
            "\"result[0] <\" at character 12: expected a number, a string, true, false, null, result or len(result)"
        );
        assert_eq!(
            refused("result[0] < 0.01 0.02"),
            "\"result[0] < 0.01 0.02\" at character 18: expected the end, || or &&"
        );
        assert_eq!(
            refused("rate < 1"),
            "\"rate < 1\" at character 1: unknown name \"rate\"; expected a number, a string, true, false, null, result or len(result)"
        );
        assert_eq!(
            refused("result[x] < 1"),
            "\"result[x] < 1\" at character 8: expected an index (0, 1, ...)"
        );
        assert_eq!(
            refused("result[0] = 1"),
            "\"result[0] = 1\" at character 11: unexpected '='"
        );
        assert_eq!(
            refused("(result[0] < 1"),
            "\"(result[0] < 1\" at character 15: expected )"
        );
        assert_eq!(
            refused("result.name == 'x"),
            "\"result.name == 'x\" at character 16: a string that is never closed"
        );
        assert_eq!(
            refused(""),
            "\"\" at character 1: expected a number, a string, true, false, null, result or len(result)"
        );
    }

    fn trigger(text: &str, app: &Value) -> Result<bool, EvaluationError> {
        Condition::parse_in(text, TRIGGER)
            .unwrap_or_else(|e| panic!("{e}"))
            .holds(Scope {
                roots: &[("app", app)],
                now: "2026-12-05T12:00:00Z".parse().unwrap(),
            })
    }

    #[test]
    fn the_trigger_language_reads_absent_fields_as_nil_and_has_the_time_helpers() {
        let app = json!({"metadata": {"name": "web", "annotations": {"example.com/v": "1"}},
            "status": {"operationState": {"phase": "Succeeded",
                "startedAt": "2026-12-05T11:00:00Z", "finishedAt": "2026-12-05T11:02:00Z",
                "syncResult": {"revision": "abc"}},
                "health": {"status": "Healthy", "lastTransitionTime": "2026-12-05T11:01:30Z"}}});
        assert_eq!(
            trigger(
                "app.status.operationState != nil and app.status.operationState.phase in ['Succeeded']",
                &app
            ),
            Ok(true)
        );
        assert_eq!(
            trigger(
                "app.status.operationState.phase in ['Error', 'Failed']",
                &app
            ),
            Ok(false)
        );
        assert_eq!(
            trigger("app.status.operationState.phase not in ['Error']", &app),
            Ok(true)
        );
        assert_eq!(
            trigger("app.metadata.deletionTimestamp != nil", &app),
            Ok(false)
        );
        assert_eq!(
            trigger("app.metadata.annotations[\"example.com/v\"] == '1'", &app),
            Ok(true)
        );
        assert_eq!(trigger("app.spec?.source.repoURL == nil", &app), Ok(true));
        // Argo CD's on-deployed: healthy since before the sync finished (within a minute).
        let deployed = "app.status.operationState != nil and app.status.operationState.phase in ['Succeeded'] and app.status.health.status == 'Healthy' and (!time.Parse(app.status.health.lastTransitionTime).Add(1 * time.Minute).Before(time.Parse(app.status.operationState.finishedAt)) or time.Parse(app.status.health.lastTransitionTime).Before(time.Parse(app.status.operationState.startedAt)))";
        assert_eq!(trigger(deployed, &app), Ok(true));
        assert_eq!(
            trigger(
                "time.Now().Sub(time.Parse(app.status.operationState.startedAt)).Minutes() >= 60",
                &app
            ),
            Ok(true)
        );
        assert_eq!(
            trigger(
                "time.Now().Sub(time.Parse(app.status.operationState.startedAt)).Hours() > 1",
                &app
            ),
            Ok(false)
        );
        let once = Condition::parse_in("app.status.operationState?.syncResult?.revision", TRIGGER)
            .unwrap();
        let empty = json!({"status": {}});
        for (app, expected) in [(&app, "abc"), (&empty, "")] {
            let scope = Scope {
                roots: &[("app", app)],
                now: Timestamp::UNIX_EPOCH,
            };
            assert_eq!(once.text_value(scope).unwrap(), expected);
        }
        assert_eq!(
            trigger("app.status.sync.status == 'Unknown'", &app)
                .unwrap_err()
                .to_string(),
            "app.status.sync is nil: app.status.sync.status cannot be read (write ?. to read nil instead)"
        );
        let error = trigger("time.Parse(app.metadata.name).Before(time.Now())", &app).unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("time.Parse(app.metadata.name): \"web\" is not a time"),
            "{error}"
        );
    }

    #[test]
    fn the_trigger_language_refuses_what_it_does_not_have_by_name() {
        let refused = |text: &str| Condition::parse_in(text, TRIGGER).unwrap_err().to_string();
        assert!(
            refused("app.metadata.name matches 'x'").contains("at character 19: expected the end"),
            "{}",
            refused("app.metadata.name matches 'x'")
        );
        assert!(
            refused("sprig.upper(app.metadata.name) == 'X'").contains("unknown name \"sprig\"")
        );
        assert!(refused("time.Since(app.metadata.name)").contains("unknown function time.Since"));
        assert!(refused("app.metadata.name.Upper() == 'X'").contains("unknown function \"Upper\""));
        // Metric conditions keep their vocabulary.
        assert!(
            Condition::parse("app.x == 1")
                .unwrap_err()
                .to_string()
                .contains("unknown name \"app\"")
        );
        assert!(Condition::parse("result in [1]").is_err());
    }
}
