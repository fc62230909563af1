//! The one read of the text: TOML parsed once, by `toml_edit`, which keeps where each item
//! was; from that one parse come the values the reader checks and the line of every
//! top-level key, job and job field its errors point at.

use std::collections::BTreeMap;
use std::ops::Range;

use serde::Deserialize;
use toml_edit::{ImDocument, Item, TableLike};

use super::errors::JobsFileError;

/// The file as TOML with the lines of its keys, or its syntax error with line and column.
pub(super) fn parse<'a>(
    text: &'a str,
    file: &str,
) -> Result<(toml::Table, Lines<'a>), Vec<JobsFileError>> {
    let syntax = |span: Option<Range<usize>>, message: &str| {
        let (line, column) = span.map_or((1, 1), |s| line_col(text, s.start));
        vec![JobsFileError::Syntax {
            file: file.to_string(),
            line,
            column,
            message: message.trim().to_string(),
        }]
    };
    let doc = ImDocument::parse(text).map_err(|e| syntax(e.span(), e.message()))?;
    let lines = Lines::of(text, doc.as_table());
    let table = toml::Table::deserialize(toml_edit::de::Deserializer::from(doc))
        .map_err(|e| syntax(e.span(), e.message()))?;
    Ok((table, lines))
}

/// 1-based line and column (in characters) of byte offset `at`.
pub(super) fn line_col(text: &str, at: usize) -> (usize, usize) {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    let before = &text[..at];
    let line = 1 + before.matches('\n').count();
    let column = 1 + before.rsplit('\n').next().map_or(0, |l| l.chars().count());
    (line, column)
}

/// Line numbers of top-level keys, jobs and their fields. Best effort: an item the parser
/// made up (the `job` of a dotted header `[job.backup]`) has no span, and its errors go by
/// the first line that names it, or without a line.
pub(super) struct Lines<'a> {
    text: &'a str,
    lines: Vec<&'a str>,
    top: BTreeMap<String, usize>,
    /// Per `[[job]]` entry: its first line and the line of each of its fields (none for an
    /// entry that is not a table).
    jobs: Vec<Option<(usize, BTreeMap<String, usize>)>>,
}

impl<'a> Lines<'a> {
    fn of(text: &'a str, root: &toml_edit::Table) -> Lines<'a> {
        // Every field of every job asks for its line: one pass over the text for the line
        // starts, then a binary search each (a scan from the top each time is quadratic,
        // minutes for a file of 10,000 jobs).
        let starts: Vec<usize> = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        let line = |span: Option<Range<usize>>| {
            span.map(|s| starts.partition_point(|&start| start <= s.start))
        };
        let top = root
            .iter()
            .filter_map(|(k, item)| Some((k.to_string(), line(item.span())?)))
            .collect();
        let job = |span: Option<Range<usize>>, table: Option<&dyn TableLike>| {
            let table = table?;
            // A dotted key's table (`dst.gap = ...`) has no span of its own; its key has.
            let at = |k: &str, item: &Item| item.span().or_else(|| table.key(k)?.span());
            let fields = table
                .iter()
                .filter_map(|(k, item)| Some((k.to_string(), line(at(k, item))?)))
                .collect();
            Some((line(span)?, fields))
        };
        let jobs = match root.get("job") {
            Some(Item::ArrayOfTables(entries)) => entries
                .iter()
                .map(|t| job(t.span(), Some(t as &dyn TableLike)))
                .collect(),
            Some(Item::Value(toml_edit::Value::Array(entries))) => entries
                .iter()
                .map(|v| job(v.span(), v.as_inline_table().map(|t| t as &dyn TableLike)))
                .collect(),
            _ => Vec::new(),
        };
        Lines {
            text,
            lines: text.lines().collect(),
            top,
            jobs,
        }
    }

    pub(super) fn top_key(&self, key: &str) -> Option<usize> {
        self.top.get(key).copied().or_else(|| {
            // Dotted headers (`[job.backup]`) carry no span: find the first line that
            // begins with the key, bare or in a header.
            self.text
                .lines()
                .position(|l| {
                    let l = l.trim_start().trim_start_matches('[').trim_start();
                    l.strip_prefix(key)
                        .is_some_and(|rest| rest.starts_with(['.', ']', ' ', '=']))
                })
                .map(|i| i + 1)
        })
    }

    /// The line of job `index`'s `[[job]]` header (or its first line).
    pub(super) fn job(&self, index: usize) -> Option<usize> {
        let Some(Some((start, _))) = self.jobs.get(index) else {
            return self.top_key("job");
        };
        // The span of a `[[job]]` table may begin at its first key; step back to the header.
        let mut line = *start;
        while line > 1 {
            let l = self.lines.get(line - 1).map_or("", |l| l.trim_start());
            if l.starts_with("[[") {
                break;
            }
            line -= 1;
        }
        Some(line)
    }

    /// The line of field `key` of job `index`.
    pub(super) fn field(&self, index: usize, key: &str) -> Option<usize> {
        self.jobs.get(index)?.as_ref()?.1.get(key).copied()
    }
}
