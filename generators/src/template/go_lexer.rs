//! Lexing of Go `text/template` source: splitting into literal text and `{{ … }}` actions (with
//! `{{-`/`-}}` trimming and `{{/* */}}` comments applied), and tokenising the inside of an action.

/// One piece of a Go template, after whitespace trimming and comment removal.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Piece {
    /// Literal text, printed as is.
    Text(String),
    /// An action: its source as written (for messages) and its tokens.
    Action { source: String, tokens: Vec<Token> },
}

/// A token inside an action.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Token {
    /// `.` alone: the current value.
    Dot,
    /// `.a.b`: a field chain on the current value, or (when `attached`) on the term right before it,
    /// as in `(index .x 0).name`.
    Field { chain: Vec<String>, attached: bool },
    /// `$` (empty name) or `$name`, with an optional field chain `$x.a.b`.
    Variable { name: String, chain: Vec<String> },
    /// A bare identifier: a function name or a keyword (`if`, `range`, `end`, …).
    Ident(String),
    /// A string literal, already unescaped.
    Str(String),
    /// An integer literal.
    Int(i64),
    /// A floating point literal.
    Float(f64),
    /// `true` or `false`.
    Bool(bool),
    /// `nil`.
    Nil,
    /// `|`.
    Pipe,
    /// `(`.
    Open,
    /// `)`.
    Close,
    /// `,` (between range variables).
    Comma,
    /// `:=`.
    Declare,
    /// `=`.
    Assign,
}

/// Splits `source` into pieces. Errors are plain-word reasons, with the action when known.
pub(crate) fn lex(source: &str) -> Result<Vec<Piece>, String> {
    let mut pieces = Vec::new();
    let mut pos = 0;
    let mut trim_next_text = false;
    while let Some(offset) = source[pos..].find("{{") {
        let start = pos + offset;
        let mut text = &source[pos..start];
        if trim_next_text {
            text = text.trim_start_matches(is_space);
        }
        let mut cursor = start + 2;
        let trim_left =
            source[cursor..].starts_with('-') && source[cursor + 1..].starts_with(is_space);
        if trim_left {
            text = text.trim_end_matches(is_space);
            cursor += 2;
        }
        push_text(&mut pieces, text);
        let (end, tokens, trim_right) = if source[cursor..].starts_with("/*") {
            let (end, trim_right) = lex_comment(source, start, cursor)?;
            (end, None, trim_right)
        } else {
            let (end, tokens, trim_right) = lex_action(source, start, cursor)?;
            (end, Some(tokens), trim_right)
        };
        if let Some(tokens) = tokens {
            pieces.push(Piece::Action {
                source: source[start..end].to_string(),
                tokens,
            });
        }
        trim_next_text = trim_right;
        pos = end;
    }
    let mut rest = &source[pos..];
    if trim_next_text {
        rest = rest.trim_start_matches(is_space);
    }
    push_text(&mut pieces, rest);
    Ok(pieces)
}

fn push_text(pieces: &mut Vec<Piece>, text: &str) {
    if !text.is_empty() {
        pieces.push(Piece::Text(text.to_string()));
    }
}

fn is_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\r' | '\n')
}

/// Shortens an action's source for messages about it.
fn excerpt(source: &str, start: usize) -> String {
    source[start..].chars().take(40).collect()
}

/// Lexes `/* … */` at `cursor`; returns the end of the action and whether it trims to the right.
fn lex_comment(source: &str, start: usize, cursor: usize) -> Result<(usize, bool), String> {
    let Some(close) = source[cursor + 2..].find("*/") else {
        return Err(format!("unclosed comment in {}", excerpt(source, start)));
    };
    let after = cursor + 2 + close + 2;
    if source[after..].starts_with("}}") {
        Ok((after + 2, false))
    } else if source[after..].starts_with(" -}}") {
        Ok((after + 4, true))
    } else {
        Err(format!(
            "comment not followed by }}}} in {}",
            excerpt(source, start)
        ))
    }
}

/// Tokenises the inside of an action starting at `cursor`, up to `}}` or ` -}}`.
fn lex_action(
    source: &str,
    start: usize,
    cursor: usize,
) -> Result<(usize, Vec<Token>, bool), String> {
    let bytes = source.as_bytes();
    let mut tokens = Vec::new();
    let mut i = cursor;
    let unclosed = || format!("unclosed action {}", excerpt(source, start));
    loop {
        let before_space = i;
        while i < bytes.len() && is_space(bytes[i] as char) {
            i += 1;
        }
        let spaced = i > before_space;
        if i >= bytes.len() {
            return Err(unclosed());
        }
        let rest = &source[i..];
        if rest.starts_with("}}") {
            return Ok((i + 2, tokens, false));
        }
        if spaced && rest.starts_with("-}}") {
            return Ok((i + 3, tokens, true));
        }
        let c = rest.chars().next().unwrap_or(' ');
        match c {
            '|' => {
                tokens.push(Token::Pipe);
                i += 1;
            }
            '(' => {
                tokens.push(Token::Open);
                i += 1;
            }
            ')' => {
                tokens.push(Token::Close);
                i += 1;
            }
            ',' => {
                tokens.push(Token::Comma);
                i += 1;
            }
            ':' if rest.starts_with(":=") => {
                tokens.push(Token::Declare);
                i += 2;
            }
            '=' => {
                tokens.push(Token::Assign);
                i += 1;
            }
            '"' => {
                let (value, len) = lex_quoted(rest).ok_or_else(|| {
                    format!("malformed string literal in {}", excerpt(source, start))
                })?;
                tokens.push(Token::Str(value));
                i += len;
            }
            '`' => {
                let close = rest[1..]
                    .find('`')
                    .ok_or_else(|| format!("unclosed raw string in {}", excerpt(source, start)))?;
                tokens.push(Token::Str(rest[1..=close].to_string()));
                i += close + 2;
            }
            '\'' => {
                return Err(format!(
                    "character literals are not supported in {}",
                    excerpt(source, start)
                ));
            }
            '.' if rest[1..].starts_with(|c: char| c.is_ascii_digit()) => {
                let (token, len) = lex_number(rest)
                    .ok_or_else(|| format!("malformed number in {}", excerpt(source, start)))?;
                tokens.push(token);
                i += len;
            }
            '.' => {
                let (chain, len) = lex_chain(rest);
                if chain.is_empty() {
                    tokens.push(Token::Dot);
                } else {
                    let attached = !spaced && matches!(tokens.last(), Some(Token::Close));
                    tokens.push(Token::Field { chain, attached });
                }
                i += len.max(1);
            }
            '$' => {
                let name_len = ident_len(&rest[1..]);
                let name = rest[1..=name_len].to_string();
                let (chain, chain_len) = lex_chain(&rest[1 + name_len..]);
                tokens.push(Token::Variable { name, chain });
                i += 1 + name_len + chain_len;
            }
            c if c.is_ascii_digit()
                || ((c == '-' || c == '+')
                    && rest[1..].starts_with(|c: char| c.is_ascii_digit() || c == '.')) =>
            {
                let (token, len) = lex_number(rest)
                    .ok_or_else(|| format!("malformed number in {}", excerpt(source, start)))?;
                tokens.push(token);
                i += len;
            }
            c if is_ident_char(c) => {
                let len = ident_len(rest);
                let word = &rest[..len];
                tokens.push(match word {
                    "true" => Token::Bool(true),
                    "false" => Token::Bool(false),
                    "nil" => Token::Nil,
                    _ => Token::Ident(word.to_string()),
                });
                i += len;
            }
            other => {
                return Err(format!(
                    "unexpected character {other:?} in {}",
                    excerpt(source, start)
                ));
            }
        }
    }
}

fn is_ident_char(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

fn ident_len(text: &str) -> usize {
    text.char_indices()
        .find(|&(_, c)| !is_ident_char(c))
        .map_or(text.len(), |(i, _)| i)
}

/// Lexes `.a.b.c` at the start of `text` (empty chain for a lone `.`); returns the chain and length.
fn lex_chain(text: &str) -> (Vec<String>, usize) {
    let mut chain = Vec::new();
    let mut i = 0;
    while text[i..].starts_with('.') {
        let len = ident_len(&text[i + 1..]);
        if len == 0 {
            break;
        }
        chain.push(text[i + 1..=i + len].to_string());
        i += 1 + len;
    }
    let len = if chain.is_empty() { 0 } else { i };
    (chain, len)
}

/// Lexes a number literal: decimal or hex integers, decimal floats with optional exponent.
fn lex_number(text: &str) -> Option<(Token, usize)> {
    let len = text
        .char_indices()
        .skip(1)
        .find(|&(i, c)| {
            let after_exponent =
                matches!(text.as_bytes()[i - 1], b'e' | b'E') && !text.starts_with("0x");
            !(c.is_ascii_alphanumeric()
                || c == '.'
                || c == '_'
                || ((c == '-' || c == '+') && after_exponent))
        })
        .map_or(text.len(), |(i, _)| i);
    let literal = text[..len].replace('_', "");
    let (negative, digits) = match literal.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, literal.trim_start_matches('+')),
    };
    let sign: i32 = if negative { -1 } else { 1 };
    if let Some(hex) = digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
    {
        return i64::from_str_radix(hex, 16)
            .ok()
            .map(|n| (Token::Int(i64::from(sign) * n), len));
    }
    if let Ok(n) = digits.parse::<i64>() {
        return Some((Token::Int(i64::from(sign) * n), len));
    }
    digits
        .parse::<f64>()
        .ok()
        .filter(|f| f.is_finite())
        .map(|f| (Token::Float(f64::from(sign) * f), len))
}

/// Lexes a double-quoted Go string literal at the start of `text`; returns its value and length.
fn lex_quoted(text: &str) -> Option<(String, usize)> {
    let mut value = String::new();
    let mut chars = text.char_indices().skip(1);
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Some((value, i + 1)),
            '\n' => return None,
            '\\' => {
                let (_, escape) = chars.next()?;
                match escape {
                    'n' => value.push('\n'),
                    't' => value.push('\t'),
                    'r' => value.push('\r'),
                    'a' => value.push('\u{7}'),
                    'b' => value.push('\u{8}'),
                    'f' => value.push('\u{c}'),
                    'v' => value.push('\u{b}'),
                    '\\' | '"' | '\'' => value.push(escape),
                    'x' | 'u' | 'U' => {
                        let width = match escape {
                            'x' => 2,
                            'u' => 4,
                            _ => 8,
                        };
                        let hex: String = (0..width)
                            .map(|_| chars.next().map(|(_, c)| c))
                            .collect::<Option<_>>()?;
                        value.push(char::from_u32(u32::from_str_radix(&hex, 16).ok()?)?);
                    }
                    _ => return None,
                }
            }
            c => value.push(c),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn action(tokens: Vec<Token>, source: &str) -> Piece {
        Piece::Action {
            source: source.to_string(),
            tokens,
        }
    }

    #[test]
    fn splits_text_actions_and_comments_with_trimming() {
        let cases: Vec<(&str, Vec<Piece>)> = vec![
            ("plain", vec![Piece::Text("plain".into())]),
            (
                "a {{ .x }} b",
                vec![
                    Piece::Text("a ".into()),
                    action(
                        vec![Token::Field {
                            chain: vec!["x".into()],
                            attached: false,
                        }],
                        "{{ .x }}",
                    ),
                    Piece::Text(" b".into()),
                ],
            ),
            (
                "a \n {{- .x -}} \n b",
                vec![
                    Piece::Text("a".into()),
                    action(
                        vec![Token::Field {
                            chain: vec!["x".into()],
                            attached: false,
                        }],
                        "{{- .x -}}",
                    ),
                    Piece::Text("b".into()),
                ],
            ),
            (
                "a {{/* note */}} b",
                vec![Piece::Text("a ".into()), Piece::Text(" b".into())],
            ),
            (
                "a {{- /* note */ -}} b",
                vec![Piece::Text("a".into()), Piece::Text("b".into())],
            ),
            ("{{-3}}", vec![action(vec![Token::Int(-3)], "{{-3}}")]),
        ];
        for (source, expected) in cases {
            assert_eq!(lex(source).unwrap(), expected, "{source}");
        }
    }

    #[test]
    fn tokenises_literals_variables_and_chains() {
        let Piece::Action { tokens, .. } =
            &lex(r#"{{ $x := (index $.a 1).b.c | printf "%s\t\x41" `r"aw` 1.5 0x1F nil true }}"#)
                .unwrap()[0]
        else {
            panic!("expected an action");
        };
        assert_eq!(
            tokens,
            &vec![
                Token::Variable {
                    name: "x".into(),
                    chain: vec![]
                },
                Token::Declare,
                Token::Open,
                Token::Ident("index".into()),
                Token::Variable {
                    name: String::new(),
                    chain: vec!["a".into()]
                },
                Token::Int(1),
                Token::Close,
                Token::Field {
                    chain: vec!["b".into(), "c".into()],
                    attached: true
                },
                Token::Pipe,
                Token::Ident("printf".into()),
                Token::Str("%s\tA".into()),
                Token::Str("r\"aw".into()),
                Token::Float(1.5),
                Token::Int(31),
                Token::Nil,
                Token::Bool(true),
            ]
        );
    }

    #[test]
    fn a_closing_brace_inside_a_string_does_not_end_the_action() {
        let pieces = lex(r#"{{ "}}" }}!"#).unwrap();
        assert_eq!(
            pieces,
            vec![
                action(vec![Token::Str("}}".into())], r#"{{ "}}" }}"#),
                Piece::Text("!".into())
            ]
        );
    }

    #[test]
    fn malformed_actions_are_errors() {
        for (source, reason) in [
            ("{{ .x ", "unclosed action"),
            ("{{/* x }}", "unclosed comment"),
            ("{{ \"abc }}", "malformed string literal"),
            ("{{ 'a' }}", "character literals"),
            ("{{ .x # }}", "unexpected character '#'"),
        ] {
            let error = lex(source).unwrap_err();
            assert!(error.contains(reason), "{source}: {error}");
        }
    }
}
