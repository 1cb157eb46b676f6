//! A report as a text table: a header line, then rows, each column
//! padded to its widest cell and two spaces apart, the last column not
//! padded (it may hold spaces: a working directory is the rest of the
//! line).

/// The table of `header` and `rows`.
pub(crate) fn render(header: &[&str], rows: &[Vec<String>]) -> Vec<u8> {
    let cols = header.len();
    let mut width: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for r in rows {
        for (w, cell) in width.iter_mut().zip(r) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let mut line = |cells: &mut dyn Iterator<Item = &str>| {
        for (i, cell) in cells.enumerate() {
            if i > 0 {
                out.push_str("  ");
            }
            out.push_str(cell);
            if i + 1 < cols {
                out.extend(std::iter::repeat_n(' ', width[i].saturating_sub(cell.chars().count())));
            }
        }
        while out.ends_with(' ') {
            out.pop();
        }
        out.push('\n');
    };
    line(&mut header.iter().copied());
    for r in rows {
        line(&mut r.iter().map(String::as_str));
    }
    out.into_bytes()
}

#[cfg(test)]
mod tests {
    #[test]
    fn columns_line_up_and_the_last_is_the_rest_of_the_line() {
        let rows = vec![
            vec!["claude".into(), "12".into(), "/home/u/my project".into()],
            vec!["pi".into(), "7".into(), "/x".into()],
        ];
        let t = String::from_utf8(super::render(&["harness", "n", "cwd"], &rows)).unwrap();
        assert_eq!(t, "harness  n   cwd\nclaude   12  /home/u/my project\npi       7   /x\n");
    }
}
