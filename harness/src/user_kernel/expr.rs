//! Launch-geometry expressions over a shape's dimensions: `cdiv(N, 64)`, `B*H`, `2*64*8*4`.
//! Integers, the dimension names of the workload and `SMS` (see [`super::vars`]),
//! `+ - * / %` (integer division rounds down), parentheses, and `cdiv(a, b)`, `min(a, b)`,
//! `max(a, b)`.

use serde::Serialize;
use std::fmt;

#[derive(Clone, Debug, PartialEq, Eq)]
enum Node {
    Num(i64),
    Var(String),
    Bin(u8, Box<Node>, Box<Node>),
    Neg(Box<Node>),
    Call(String, Vec<Node>),
}

/// A parsed expression, remembering its text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expr {
    text: String,
    node: Node,
}

impl Serialize for Expr {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

const FUNCTIONS: [&str; 3] = ["cdiv", "min", "max"];

struct Parser<'a> {
    b: &'a [u8],
    i: usize,
    /// Parentheses, calls and minus signs open around the point being read.
    depth: usize,
}

/// The most an expression nests (parentheses, calls, minus signs), and its longest text: far
/// beyond any launch's arithmetic, and short of what would exhaust the stack to read or
/// evaluate.
const MAX_DEPTH: usize = 64;
const MAX_LEN: usize = 1000;

impl Parser<'_> {
    fn ws(&mut self) {
        while self.i < self.b.len() && self.b[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.b.get(self.i).copied()
    }

    fn sum(&mut self) -> Result<Node, String> {
        let mut left = self.product()?;
        while let Some(op @ (b'+' | b'-')) = self.peek() {
            self.i += 1;
            left = Node::Bin(op, Box::new(left), Box::new(self.product()?));
        }
        Ok(left)
    }

    fn product(&mut self) -> Result<Node, String> {
        let mut left = self.unary()?;
        while let Some(op @ (b'*' | b'/' | b'%')) = self.peek() {
            self.i += 1;
            left = Node::Bin(op, Box::new(left), Box::new(self.unary()?));
        }
        Ok(left)
    }

    fn unary(&mut self) -> Result<Node, String> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(format!("it nests more than {MAX_DEPTH} deep"));
        }
        let node = self.operand();
        self.depth -= 1;
        node
    }

    fn operand(&mut self) -> Result<Node, String> {
        match self.peek() {
            Some(b'-') => {
                self.i += 1;
                Ok(Node::Neg(Box::new(self.unary()?)))
            }
            Some(b'(') => {
                self.i += 1;
                let inner = self.sum()?;
                self.expect(b')')?;
                Ok(inner)
            }
            Some(c) if c.is_ascii_digit() => {
                let start = self.i;
                while self.i < self.b.len() && self.b[self.i].is_ascii_digit() {
                    self.i += 1;
                }
                let text = String::from_utf8_lossy(&self.b[start..self.i]);
                text.parse()
                    .map(Node::Num)
                    .map_err(|_| format!("number {text} is too large"))
            }
            Some(c) if c.is_ascii_alphabetic() || c == b'_' => {
                let start = self.i;
                while self.i < self.b.len()
                    && (self.b[self.i].is_ascii_alphanumeric() || self.b[self.i] == b'_')
                {
                    self.i += 1;
                }
                let name = String::from_utf8_lossy(&self.b[start..self.i]).into_owned();
                if self.peek() != Some(b'(') {
                    return Ok(Node::Var(name));
                }
                if !FUNCTIONS.contains(&name.as_str()) {
                    return Err(format!(
                        "unknown function {name}(); available: {}",
                        FUNCTIONS.join(", ")
                    ));
                }
                self.i += 1;
                let mut args = vec![self.sum()?];
                while self.peek() == Some(b',') {
                    self.i += 1;
                    args.push(self.sum()?);
                }
                self.expect(b')')?;
                if args.len() != 2 {
                    return Err(format!("{name}() takes 2 arguments, got {}", args.len()));
                }
                Ok(Node::Call(name, args))
            }
            Some(c) => Err(format!("unexpected {:?}", c as char)),
            None => Err("unexpected end".into()),
        }
    }

    fn expect(&mut self, c: u8) -> Result<(), String> {
        if self.peek() == Some(c) {
            self.i += 1;
            Ok(())
        } else {
            Err(format!("expected {:?}", c as char))
        }
    }
}

impl Expr {
    pub fn parse(text: &str) -> Result<Self, String> {
        if text.len() > MAX_LEN {
            return Err(format!(
                "cannot read the expression `{}...`: it is longer than {MAX_LEN} characters",
                text.chars().take(40).collect::<String>()
            ));
        }
        let mut p = Parser {
            b: text.as_bytes(),
            i: 0,
            depth: 0,
        };
        let node = p
            .sum()
            .and_then(|n| match p.peek() {
                None => Ok(n),
                Some(c) => Err(format!("unexpected {:?}", c as char)),
            })
            .map_err(|e| format!("cannot read the expression `{text}`: {e}"))?;
        Ok(Self {
            text: text.trim().to_string(),
            node,
        })
    }

    /// Names this expression uses that are not in `vars`.
    pub fn unknown_names(&self, vars: &[&str]) -> Vec<String> {
        fn walk(n: &Node, vars: &[&str], out: &mut Vec<String>) {
            match n {
                Node::Num(_) => {}
                Node::Var(v) => {
                    if !vars.contains(&v.as_str()) {
                        out.push(v.clone());
                    }
                }
                Node::Bin(_, a, b) => {
                    walk(a, vars, out);
                    walk(b, vars, out);
                }
                Node::Neg(a) => walk(a, vars, out),
                Node::Call(_, args) => args.iter().for_each(|a| walk(a, vars, out)),
            }
        }
        let mut out = Vec::new();
        walk(&self.node, vars, &mut out);
        out
    }

    /// The value with the dimensions `vars`.
    pub fn eval(&self, vars: &[(&str, usize)]) -> Result<i64, String> {
        // Every step is checked: a value past 64 bits is an error, not a wrapped number.
        fn ev(n: &Node, vars: &[(&str, usize)]) -> Result<i64, String> {
            let overflow = || "the value does not fit in 64 bits".to_string();
            let div = |a: i64, b: i64| match b {
                0 => Err("division by zero".to_string()),
                _ => a.checked_div_euclid(b).ok_or_else(overflow),
            };
            Ok(match n {
                Node::Num(v) => *v,
                Node::Var(v) => vars
                    .iter()
                    .find(|(n, _)| n == v)
                    .map(|(_, x)| *x as i64)
                    .ok_or_else(|| format!("unknown name {v}"))?,
                Node::Neg(a) => ev(a, vars)?.checked_neg().ok_or_else(overflow)?,
                Node::Bin(op, a, b) => {
                    let (a, b) = (ev(a, vars)?, ev(b, vars)?);
                    match op {
                        b'+' => a.checked_add(b).ok_or_else(overflow)?,
                        b'-' => a.checked_sub(b).ok_or_else(overflow)?,
                        b'*' => a.checked_mul(b).ok_or_else(overflow)?,
                        b'/' => div(a, b)?,
                        _ if b == 0 => return Err("division by zero".into()),
                        _ => a.checked_rem_euclid(b).ok_or_else(overflow)?,
                    }
                }
                Node::Call(f, args) => {
                    let (a, b) = (ev(&args[0], vars)?, ev(&args[1], vars)?);
                    match f.as_str() {
                        "cdiv" => div(
                            a.checked_add(b)
                                .and_then(|x| x.checked_sub(1))
                                .ok_or_else(overflow)?,
                            b,
                        )?,
                        "min" => a.min(b),
                        _ => a.max(b),
                    }
                }
            })
        }
        ev(&self.node, vars).map_err(|e| format!("`{}`: {e}", self.text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_expression_nested_past_any_launchs_arithmetic_is_refused_not_a_crash() {
        let deep = |n: usize| format!("{}1{}", "(".repeat(n), ")".repeat(n));
        assert_eq!(Expr::parse(&deep(60)).unwrap().eval(&[]), Ok(1));
        let e = Expr::parse(&deep(3000)).unwrap_err();
        assert!(e.contains("it is longer than 1000 characters"), "{e}");
        let e = Expr::parse(&deep(300)).unwrap_err();
        assert!(e.contains("it nests more than 64 deep"), "{e}");
        let e = Expr::parse(&format!("{}1", "-".repeat(500))).unwrap_err();
        assert!(e.contains("it nests more than 64 deep"), "{e}");
        let chain = vec!["1"; 400].join("+");
        assert_eq!(Expr::parse(&chain).unwrap().eval(&[]), Ok(400));
    }

    #[test]
    fn evaluates_dimensions_and_functions() {
        let v = [("M", 100), ("N", 37)];
        assert_eq!(Expr::parse("cdiv(N, 16)").unwrap().eval(&v), Ok(3));
        assert_eq!(Expr::parse("M/64 + 1").unwrap().eval(&v), Ok(2));
        assert_eq!(
            Expr::parse("2*(M%7) - max(1, N)").unwrap().eval(&v),
            Ok(-33)
        );
        assert!(Expr::parse("M/(N-37)").unwrap().eval(&v).is_err());
        // Past 64 bits is an error, not a wrapped or saturated number (nor a panic).
        for past in [
            "(0-9223372036854775807-1)/(0-1)",
            "(0-9223372036854775807-1)%(0-1)",
            "9223372036854775807+1",
            "cdiv(9223372036854775807, 2)",
            "-(0-9223372036854775807-1)",
            "M*92233720368547759",
        ] {
            let e = Expr::parse(past).unwrap().eval(&v).unwrap_err();
            assert!(e.contains("does not fit in 64 bits"), "{past}: {e}");
        }
        assert_eq!(Expr::parse("M*Q").unwrap().unknown_names(&["M"]), vec!["Q"]);
        let e = Expr::parse("ceil(M/2)").unwrap_err();
        assert!(e.contains("unknown function ceil()"), "{e}");
        assert!(Expr::parse("M +").is_err() && Expr::parse("(M").is_err());
    }
}
