//! fio's arithmetic in option values (`size=(4*1024)`, `filesize=5*1024*1024*$mb_memory/8`).

/// Whether `v` is an arithmetic expression fio evaluates: made of digits, spaces, operators
/// and parentheses only, and either in parentheses or with an operator that no range or list
/// has (`*`, `/`, `%`, `^`): `4096-65536` stays a range.
pub(super) fn is_arithmetic(v: &str) -> bool {
    let v = v.trim();
    // `30%` is a share (of a device, of a job), not a remainder.
    !v.ends_with('%')
        && v.bytes()
            .all(|b| b.is_ascii_digit() || b" +-*/%^()".contains(&b))
        && v.bytes().any(|b| b.is_ascii_digit())
        && ((v.starts_with('(') && v.ends_with(')')) || v.bytes().any(|b| b"*/%^".contains(&b)))
}

/// Evaluates an integer expression (`+ - * / % ^`, parentheses, unary minus); `None` on a
/// malformed one, a division by zero or an overflow.
pub(super) fn eval(text: &str) -> Option<i64> {
    struct P<'a>(&'a [u8], usize);
    impl P<'_> {
        fn peek(&mut self) -> Option<u8> {
            while self.0.get(self.1) == Some(&b' ') {
                self.1 += 1;
            }
            self.0.get(self.1).copied()
        }
        fn sum(&mut self, depth: u32) -> Option<i64> {
            let mut v = self.product(depth)?;
            while let Some(op @ (b'+' | b'-')) = self.peek() {
                self.1 += 1;
                let r = self.product(depth)?;
                v = if op == b'+' {
                    v.checked_add(r)?
                } else {
                    v.checked_sub(r)?
                };
            }
            Some(v)
        }
        fn product(&mut self, depth: u32) -> Option<i64> {
            let mut v = self.power(depth)?;
            while let Some(op @ (b'*' | b'/' | b'%')) = self.peek() {
                self.1 += 1;
                let r = self.power(depth)?;
                v = match op {
                    b'*' => v.checked_mul(r)?,
                    b'/' => v.checked_div(r)?,
                    _ => v.checked_rem(r)?,
                };
            }
            Some(v)
        }
        fn power(&mut self, depth: u32) -> Option<i64> {
            if depth > 32 {
                return None;
            }
            let base = self.atom(depth)?;
            if self.peek() == Some(b'^') {
                self.1 += 1;
                let e = u32::try_from(self.power(depth + 1)?).ok()?;
                return base.checked_pow(e);
            }
            Some(base)
        }
        fn atom(&mut self, depth: u32) -> Option<i64> {
            if depth > 32 {
                return None;
            }
            match self.peek()? {
                b'(' => {
                    self.1 += 1;
                    let v = self.sum(depth + 1)?;
                    (self.peek()? == b')').then(|| self.1 += 1)?;
                    Some(v)
                }
                b'-' => {
                    self.1 += 1;
                    self.atom(depth + 1)?.checked_neg()
                }
                _ => {
                    let start = self.1;
                    while self.0.get(self.1).is_some_and(u8::is_ascii_digit) {
                        self.1 += 1;
                    }
                    std::str::from_utf8(&self.0[start..self.1])
                        .ok()?
                        .parse()
                        .ok()
                }
            }
        }
    }
    let mut p = P(text.as_bytes(), 0);
    let v = p.sum(0)?;
    (p.peek().is_none()).then_some(v)
}
