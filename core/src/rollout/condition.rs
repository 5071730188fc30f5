//! The conditions of a metric analysis (`successCondition`, `failureCondition`): small
//! expressions over a measurement's `result`, parsed once when the strategy is validated and
//! evaluated against each measurement.
//!
//! The grammar (whitespace between tokens is free):
//!
//! ```text
//! condition  := or
//! or         := and ( ("||" | "or") and )*
//! and        := not ( ("&&" | "and") not )*
//! not        := ("!" | "not") not | "(" or ")" | comparison
//! comparison := operand ( ("<" | "<=" | ">" | ">=" | "==" | "!=") operand )?
//! operand    := number | string | "true" | "false" | "null" | path | "len(" path ")"
//! path       := "result" ( "[" digits "]" | "." name )*
//! ```
//!
//! Numbers are decimal (`0.01`, `-3`, `1e-3`); strings are quoted with `"` or `'`. Two numbers
//! compare as numbers, two strings as text; `==` and `!=` compare any two values (of different
//! types: unequal); an ordering of anything else, an element or field that does not exist, or an
//! operand alone that is not a boolean is an evaluation error, never a guess.

use std::cmp::Ordering;
use std::fmt;

use serde_json::Value;

/// A parsed condition, with the text it was written as.
#[derive(Clone, Debug, PartialEq)]
pub struct Condition {
    text: String,
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

#[derive(Clone, Debug, PartialEq)]
enum Expression {
    Or(Box<Self>, Box<Self>),
    And(Box<Self>, Box<Self>),
    Not(Box<Self>),
    Compare(Operand, Comparison, Operand),
    Alone(Operand),
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

#[derive(Clone, Debug, PartialEq)]
enum Operand {
    Literal(Value),
    Path(Vec<Step>),
    Len(Vec<Step>),
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Step {
    Index(usize),
    Field(String),
}

impl Condition {
    /// Parses `text`.
    ///
    /// # Errors
    /// Text that does not follow the grammar, with the character where it stops following it.
    pub fn parse(text: &str) -> Result<Self, ConditionError> {
        let mut parser = Parser {
            text,
            tokens: tokenize(text)?,
            next: 0,
        };
        let expression = parser.or()?;
        if let Some(token) = parser.tokens.get(parser.next) {
            return Err(parser.error_at(token.at, "expected the end, || or &&"));
        }
        Ok(Self {
            text: text.to_owned(),
            expression,
        })
    }

    /// The text it was written as.
    #[must_use]
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Whether `result` satisfies it.
    ///
    /// # Errors
    /// An element or field that does not exist, an ordering of values that are not both numbers
    /// or both strings, an operand alone that is not a boolean.
    pub fn evaluate(&self, result: &Value) -> Result<bool, EvaluationError> {
        self.expression.evaluate(result)
    }
}

impl fmt::Display for Condition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl Expression {
    fn evaluate(&self, result: &Value) -> Result<bool, EvaluationError> {
        match self {
            Self::Or(a, b) => Ok(a.evaluate(result)? || b.evaluate(result)?),
            Self::And(a, b) => Ok(a.evaluate(result)? && b.evaluate(result)?),
            Self::Not(a) => Ok(!a.evaluate(result)?),
            Self::Alone(operand) => match operand.value(result)? {
                Value::Bool(b) => Ok(b),
                other => Err(EvaluationError(format!(
                    "{} is {other}, not a boolean",
                    operand.describe()
                ))),
            },
            Self::Compare(a, comparison, b) => {
                let (left, right) = (a.value(result)?, b.value(result)?);
                let ordering = match (&left, &right) {
                    (Value::Number(x), Value::Number(y)) => x
                        .as_f64()
                        .zip(y.as_f64())
                        .and_then(|(x, y)| x.partial_cmp(&y)),
                    (Value::String(x), Value::String(y)) => Some(x.cmp(y)),
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
                    (_, None) => Err(EvaluationError(format!(
                        "cannot order {left} and {right} (both must be numbers or both strings)"
                    ))),
                }
            }
        }
    }
}

impl Operand {
    fn value(&self, result: &Value) -> Result<Value, EvaluationError> {
        match self {
            Self::Literal(value) => Ok(value.clone()),
            Self::Path(steps) => follow(result, steps).cloned(),
            Self::Len(steps) => match follow(result, steps)? {
                Value::Array(items) => Ok(Value::from(items.len())),
                Value::Object(fields) => Ok(Value::from(fields.len())),
                Value::String(text) => Ok(Value::from(text.chars().count())),
                other => Err(EvaluationError(format!(
                    "len({}): {other} has no length",
                    path_text(steps)
                ))),
            },
        }
    }

    fn describe(&self) -> String {
        match self {
            Self::Literal(value) => value.to_string(),
            Self::Path(steps) => path_text(steps),
            Self::Len(steps) => format!("len({})", path_text(steps)),
        }
    }
}

/// The value at `steps` in `result`.
fn follow<'a>(result: &'a Value, steps: &[Step]) -> Result<&'a Value, EvaluationError> {
    steps
        .iter()
        .enumerate()
        .try_fold(result, |value, (i, step)| {
            let found = match step {
                Step::Index(index) => value.as_array().and_then(|items| items.get(*index)),
                Step::Field(name) => value.as_object().and_then(|fields| fields.get(name)),
            };
            found.ok_or_else(|| {
                let quoted: String = value.to_string().chars().take(80).collect();
                EvaluationError(format!(
                    "{} does not exist ({} is {quoted})",
                    path_text(&steps[..=i]),
                    path_text(&steps[..i])
                ))
            })
        })
}

/// `result[0].value`.
fn path_text(steps: &[Step]) -> String {
    let mut text = "result".to_owned();
    for step in steps {
        match step {
            Step::Index(i) => text.push_str(&format!("[{i}]")),
            Step::Field(name) => text.push_str(&format!(".{name}")),
        }
    }
    text
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
const SYMBOLS: [&str; 15] = [
    "<=", ">=", "==", "!=", "&&", "||", "<", ">", "!", "(", ")", "[", "]", ".", ",",
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
        if self.eat(&["("], None) {
            let inner = self.or()?;
            self.expect(")")?;
            return Ok(inner);
        }
        let left = self.operand()?;
        let comparison = match self.peek() {
            Some(Kind::Symbol("<")) => Comparison::Less,
            Some(Kind::Symbol("<=")) => Comparison::LessOrEqual,
            Some(Kind::Symbol(">")) => Comparison::Greater,
            Some(Kind::Symbol(">=")) => Comparison::GreaterOrEqual,
            Some(Kind::Symbol("==")) => Comparison::Equal,
            Some(Kind::Symbol("!=")) => Comparison::NotEqual,
            _ => return Ok(Expression::Alone(left)),
        };
        self.next += 1;
        let right = self.operand()?;
        Ok(Expression::Compare(left, comparison, right))
    }

    fn operand(&mut self) -> Result<Operand, ConditionError> {
        let expected = "expected a number, a string, true, false, null, result or len(result)";
        let Some(token) = self.tokens.get(self.next).cloned() else {
            return Err(self.error(expected));
        };
        self.next += 1;
        match token.kind {
            Kind::Number(n) => Ok(Operand::Literal(
                serde_json::Number::from_f64(n).map_or(Value::Null, Value::Number),
            )),
            Kind::Text(text) => Ok(Operand::Literal(Value::String(text))),
            Kind::Name(name) => match name.as_str() {
                "true" => Ok(Operand::Literal(Value::Bool(true))),
                "false" => Ok(Operand::Literal(Value::Bool(false))),
                "null" => Ok(Operand::Literal(Value::Null)),
                "result" => Ok(Operand::Path(self.path()?)),
                "len" => {
                    self.expect("(")?;
                    if !matches!(self.peek(), Some(Kind::Name(n)) if n == "result") {
                        return Err(self.error("expected result"));
                    }
                    self.next += 1;
                    let path = self.path()?;
                    self.expect(")")?;
                    Ok(Operand::Len(path))
                }
                _ => Err(self.error_at(token.at, &format!("unknown name {name:?}; {expected}"))),
            },
            Kind::Symbol(_) => Err(self.error_at(token.at, expected)),
        }
    }

    fn path(&mut self) -> Result<Vec<Step>, ConditionError> {
        let mut steps = Vec::new();
        loop {
            if self.eat(&["["], None) {
                match self.peek() {
                    Some(Kind::Number(n)) if n.fract() == 0.0 && *n >= 0.0 && *n < 1e9 => {
                        #[allow(
                            clippy::cast_possible_truncation,
                            clippy::cast_sign_loss,
                            reason = "a whole number between 0 and 1e9"
                        )]
                        steps.push(Step::Index(*n as usize));
                        self.next += 1;
                    }
                    _ => return Err(self.error("expected an index (0, 1, ...)")),
                }
                self.expect("]")?;
            } else if self.eat(&["."], None) {
                match self.peek() {
                    Some(Kind::Name(name)) => {
                        steps.push(Step::Field(name.clone()));
                        self.next += 1;
                    }
                    _ => return Err(self.error("expected a field name")),
                }
            } else {
                return Ok(steps);
            }
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
}
