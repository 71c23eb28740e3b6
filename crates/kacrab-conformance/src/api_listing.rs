//! The public API of a crate as a sorted text listing, from rustdoc's JSON output, and
//! the comparison of two listings: the project's semver check (issue 17, item 2).
//!
//! `cargo semver-checks` would do this with a full query engine, but it is a large build
//! for a CI with no minutes to spare; the equivalent here reads the JSON rustdoc already
//! writes (`cargo rustdoc -- -Z unstable-options --output-format json`) with
//! `serde_json`, already in the tree.
//!
//! **What a line says.** One line per public item, reachable from the crate root:
//! modules, re-exports, functions and methods (with their signatures), constants,
//! statics, type aliases, traits (with their required items), the trait
//! implementations of each public type (auto traits included: losing `Send` breaks
//! callers), and types. A type whose every field or variant is visible and which is
//! **not** `#[non_exhaustive]` is one line that lists all of them, so adding a field
//! to such a struct, or a variant to such an enum, changes that line: that is a
//! breaking change (embedders build it with a literal or match it exhaustively). A
//! `#[non_exhaustive]` type (or one with private fields) is a line saying so plus one
//! line per public field or variant, so adding one is an addition.
//!
//! **What the comparison says.** Lines only in the new listing are additions
//! (compatible). Lines only in the baseline are removals, or changes when the new
//! listing has a line for the same item: both are breaking. That is a conservative
//! approximation of the semver rules (RFC 1105, "API evolution"): a changed signature
//! is reported breaking even where inference would hide it.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use serde_json::Value;

/// The listing of one crate's public API: sorted, deduplicated lines.
pub fn listing(doc: &Value) -> Result<Vec<String>, String> {
    let index = doc
        .get("index")
        .and_then(Value::as_object)
        .ok_or("not rustdoc JSON: no `index`")?;
    let paths = doc.get("paths").and_then(Value::as_object);
    let root = id_key(doc.get("root").ok_or("not rustdoc JSON: no `root`")?);
    let root_item = index
        .get(&root)
        .ok_or("the root module is not in the index")?;
    let crate_name = root_item["name"].as_str().unwrap_or("crate").to_owned();
    let mut lister = Lister {
        index,
        paths,
        lines: BTreeSet::new(),
        visited: HashSet::new(),
    };
    lister.module(&root, &crate_name);
    Ok(lister.lines.into_iter().collect())
}

/// The outcome of comparing a new listing with a baseline.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Comparison {
    /// Items whose line changed: (baseline line, new line). Breaking.
    pub changed: Vec<(String, String)>,
    /// Items only in the baseline. Breaking.
    pub removed: Vec<String>,
    /// Items only in the new listing. Compatible.
    pub added: Vec<String>,
}

impl Comparison {
    /// Whether the new listing breaks an embedder of the baseline.
    #[must_use]
    pub fn is_breaking(&self) -> bool {
        !self.changed.is_empty() || !self.removed.is_empty()
    }

    /// The report, in the order a reviewer reads it.
    #[must_use]
    pub fn report(&self) -> String {
        let mut out = String::new();
        if !self.changed.is_empty() {
            out.push_str("changed (breaking):\n");
            for (old, new) in &self.changed {
                out.push_str(&format!("  - {old}\n  + {new}\n"));
            }
        }
        if !self.removed.is_empty() {
            out.push_str("removed (breaking):\n");
            for line in &self.removed {
                out.push_str(&format!("  - {line}\n"));
            }
        }
        if !self.added.is_empty() {
            out.push_str("added (compatible):\n");
            for line in &self.added {
                out.push_str(&format!("  + {line}\n"));
            }
        }
        if out.is_empty() {
            out.push_str("no change\n");
        }
        out
    }
}

/// Compares a new listing with a baseline (both as lines; blank lines and `#` comments
/// are ignored).
#[must_use]
pub fn compare(baseline: &[String], new: &[String]) -> Comparison {
    let keep = |l: &&String| !l.trim().is_empty() && !l.starts_with('#');
    let old: BTreeSet<&String> = baseline.iter().filter(keep).collect();
    let new: BTreeSet<&String> = new.iter().filter(keep).collect();
    let mut removed: BTreeMap<String, Vec<&String>> = BTreeMap::new();
    for line in old.difference(&new) {
        removed.entry(item_key(line)).or_default().push(line);
    }
    let mut comparison = Comparison::default();
    for line in new.difference(&old) {
        match removed.get_mut(&item_key(line)).and_then(Vec::pop) {
            Some(was) => comparison.changed.push((was.clone(), (*line).clone())),
            None => comparison.added.push((*line).clone()),
        }
    }
    comparison.removed = removed.into_values().flatten().cloned().collect();
    comparison.removed.sort();
    comparison
}

/// The characters that end an item's path in a line (a `::` continues it).
const PATH_END: [char; 7] = ['(', '<', '{', ':', ' ', ';', '='];

/// The item a line is about: its kind and path, without generics or signature.
fn item_key(line: &str) -> String {
    let mut words = line.splitn(2, ' ');
    let kind = words.next().unwrap_or_default();
    let rest = words.next().unwrap_or_default();
    if kind == "impl" || kind == "use" {
        // A type's trait implementations are separate facts: one line each.
        return line.to_owned();
    }
    let end = rest.find(PATH_END).map_or(rest.len(), |i| {
        // `a::b` continues a path; a lone `:` ends it.
        let mut i = i;
        while rest[i..].starts_with("::") {
            match rest[i + 2..].find(PATH_END) {
                Some(j) => i = i + 2 + j,
                None => return rest.len(),
            }
        }
        i
    });
    format!("{kind} {}", &rest[..end])
}

fn id_key(id: &Value) -> String {
    match id {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

struct Lister<'a> {
    index: &'a serde_json::Map<String, Value>,
    paths: Option<&'a serde_json::Map<String, Value>>,
    lines: BTreeSet<String>,
    /// (module id, path) pairs already listed: glob re-exports may form cycles.
    visited: HashSet<(String, String)>,
}

impl Lister<'_> {
    fn item(&self, id: &Value) -> Option<&Value> {
        self.index.get(&id_key(id))
    }

    fn module(&mut self, id: &str, path: &str) {
        // A module re-exported inside itself would make paths without end.
        if path.matches("::").count() > 16 || !self.visited.insert((id.to_owned(), path.to_owned()))
        {
            return;
        }
        let Some(items) = self
            .index
            .get(id)
            .and_then(|m| m["inner"]["module"]["items"].as_array())
        else {
            return;
        };
        for child in items.clone() {
            self.entry(&child, path);
        }
    }

    /// One entry of a module: an item defined (or inlined) there, or a re-export.
    fn entry(&mut self, id: &Value, module_path: &str) {
        let Some(item) = self.item(id).cloned() else {
            return;
        };
        let (kind, inner) = inner_of(&item);
        if kind == "use" {
            let name = inner["name"].as_str().unwrap_or("_");
            let source = inner["source"].as_str().unwrap_or("_");
            let target = &inner["id"];
            if inner["is_glob"].as_bool() == Some(true) {
                match self.item(target).map(inner_of) {
                    Some(("module", _)) => self.module(&id_key(target), module_path),
                    _ => {
                        self.lines
                            .insert(format!("use {module_path}::* = {source}::*"));
                    }
                }
            } else {
                let to = self.path_of(target).unwrap_or_else(|| source.to_owned());
                self.lines
                    .insert(format!("use {module_path}::{name} = {to}"));
                // An item of this crate is listed under every public path: a re-export
                // of an item from a private module is the only place it is listed.
                if let Some(item) = self.item(target).cloned() {
                    self.definition(&item, &format!("{module_path}::{name}"));
                }
            }
            return;
        }
        let Some(name) = item["name"].as_str() else {
            return;
        };
        let path = format!("{module_path}::{name}");
        self.definition(&item, &path);
    }

    fn definition(&mut self, item: &Value, path: &str) {
        let (kind, inner) = inner_of(item);
        let attrs = attrs_of(item);
        match kind {
            "module" => {
                self.lines.insert(format!("mod {path}"));
                let id = id_key(&item["id"]);
                self.module(&id, path);
            }
            "function" => {
                let line = format!("fn {path}{}", self.signature(inner));
                self.lines.insert(line);
            }
            "constant" => {
                let line = format!("const {path}: {}", self.ty(&inner["type"]));
                self.lines.insert(line);
            }
            "static" => {
                let mutability = if inner["is_mutable"].as_bool() == Some(true) {
                    "mut "
                } else {
                    ""
                };
                let line = format!("static {mutability}{path}: {}", self.ty(&inner["type"]));
                self.lines.insert(line);
            }
            "type_alias" => {
                let line = format!(
                    "type {path}{} = {}",
                    self.generics(&inner["generics"]),
                    self.ty(&inner["type"])
                );
                self.lines.insert(line);
            }
            "macro" | "proc_macro" => {
                self.lines.insert(format!("macro {path}"));
            }
            "trait" => self.trait_def(inner, path),
            "struct" => {
                self.struct_def(inner, path, &attrs);
                self.impls(inner, path);
            }
            "union" => {
                self.struct_fields_lines("union", inner["fields"].as_array(), path, "(union)");
                self.impls(inner, path);
            }
            "enum" => {
                self.enum_def(inner, path, &attrs);
                self.impls(inner, path);
            }
            other => {
                self.lines.insert(format!("{other} {path}"));
            }
        }
    }

    fn struct_def(&mut self, inner: &Value, path: &str, attrs: &str) {
        let generics = self.generics(&inner["generics"]);
        let kind = &inner["kind"];
        if kind.as_str() == Some("unit") || kind.get("unit").is_some() {
            self.lines
                .insert(format!("struct {path}{generics}{attrs};"));
            return;
        }
        if let Some(plain) = kind.get("plain") {
            let fields = plain["fields"].as_array();
            let stripped = plain["has_stripped_fields"].as_bool() == Some(true);
            if attrs.is_empty() && !stripped {
                let list = self.named_fields(fields);
                self.lines
                    .insert(format!("struct {path}{generics} {{ {list} }}"));
            } else {
                let why = if attrs.is_empty() {
                    " (private fields)"
                } else {
                    attrs
                };
                self.struct_fields_lines("struct", fields, &format!("{path}{generics}"), why);
            }
            return;
        }
        if let Some(tuple) = kind.get("tuple").and_then(Value::as_array) {
            let stripped = tuple.iter().any(Value::is_null);
            if attrs.is_empty() && !stripped {
                let list: Vec<String> = tuple.iter().map(|f| self.field_type(f)).collect();
                self.lines
                    .insert(format!("struct {path}{generics}({})", list.join(", ")));
            } else {
                let why = if attrs.is_empty() {
                    " (private fields)"
                } else {
                    attrs
                };
                self.lines.insert(format!("struct {path}{generics}{why}"));
                for (i, field) in tuple.iter().enumerate() {
                    if !field.is_null() {
                        let line = format!("field {path}::{i}: {}", self.field_type(field));
                        self.lines.insert(line);
                    }
                }
            }
        }
    }

    /// A type that may grow: one line for it, one per public field.
    fn struct_fields_lines(
        &mut self,
        kind: &str,
        fields: Option<&Vec<Value>>,
        path: &str,
        why: &str,
    ) {
        self.lines.insert(format!("{kind} {path}{why}"));
        let base = path.split('<').next().unwrap_or(path).to_owned();
        for field in fields.into_iter().flatten() {
            if let Some(item) = self.item(field) {
                let name = item["name"].as_str().unwrap_or("_");
                let line = format!(
                    "field {base}::{name}: {}",
                    self.ty(&item["inner"]["struct_field"])
                );
                self.lines.insert(line);
            }
        }
    }

    fn named_fields(&self, fields: Option<&Vec<Value>>) -> String {
        let mut list: Vec<String> = fields
            .into_iter()
            .flatten()
            .filter_map(|f| self.item(f))
            .map(|item| {
                let name = item["name"].as_str().unwrap_or("_");
                format!("{name}: {}", self.ty(&item["inner"]["struct_field"]))
            })
            .collect();
        list.sort();
        list.join(", ")
    }

    fn field_type(&self, id: &Value) -> String {
        self.item(id).map_or_else(
            || "_".to_owned(),
            |item| self.ty(&item["inner"]["struct_field"]),
        )
    }

    fn enum_def(&mut self, inner: &Value, path: &str, attrs: &str) {
        let generics = self.generics(&inner["generics"]);
        let variants: Vec<Value> = inner["variants"].as_array().cloned().unwrap_or_default();
        let mut names = Vec::new();
        for id in &variants {
            let Some(variant) = self.item(id).cloned() else {
                continue;
            };
            let name = variant["name"].as_str().unwrap_or("_").to_owned();
            let vattrs = attrs_of(&variant);
            let kind = &variant["inner"]["variant"]["kind"];
            let shape = if kind.as_str() == Some("plain") {
                String::new()
            } else if let Some(tuple) = kind.get("tuple").and_then(Value::as_array) {
                let list: Vec<String> = tuple
                    .iter()
                    .map(|f| {
                        if f.is_null() {
                            "_".to_owned()
                        } else {
                            self.field_type(f)
                        }
                    })
                    .collect();
                format!("({})", list.join(", "))
            } else if let Some(fields) = kind.get("struct") {
                let stripped = fields["has_stripped_fields"].as_bool() == Some(true);
                let dots = if stripped || !vattrs.is_empty() {
                    ", .."
                } else {
                    ""
                };
                format!(
                    " {{ {}{dots} }}",
                    self.named_fields(fields["fields"].as_array())
                )
            } else {
                format!(" {kind}")
            };
            self.lines
                .insert(format!("variant {path}::{name}{vattrs}{shape}"));
            names.push(name);
        }
        if attrs.is_empty() && inner["has_stripped_variants"].as_bool() != Some(true) {
            names.sort();
            self.lines
                .insert(format!("enum {path}{generics} {{ {} }}", names.join(", ")));
        } else {
            self.lines.insert(format!("enum {path}{generics}{attrs}"));
        }
    }

    fn trait_def(&mut self, inner: &Value, path: &str) {
        let mut required = Vec::new();
        for id in inner["items"].as_array().cloned().unwrap_or_default() {
            let Some(item) = self.item(&id).cloned() else {
                continue;
            };
            let name = item["name"].as_str().unwrap_or("_").to_owned();
            let (kind, member) = inner_of(&item);
            let (line, has_default) = match kind {
                "function" => (
                    format!("trait_fn {path}::{name}{}", self.signature(member)),
                    member["has_body"].as_bool() == Some(true),
                ),
                "assoc_type" => (
                    format!(
                        "trait_type {path}::{name}{}",
                        self.bounds_suffix(&member["bounds"])
                    ),
                    !member["type"].is_null(),
                ),
                "assoc_const" => (
                    format!("trait_const {path}::{name}: {}", self.ty(&member["type"])),
                    !member["value"].is_null(),
                ),
                other => (format!("trait_{other} {path}::{name}"), false),
            };
            self.lines.insert(line);
            if !has_default {
                required.push(name);
            }
        }
        required.sort();
        let unsafety = if inner["is_unsafe"].as_bool() == Some(true) {
            "unsafe "
        } else {
            ""
        };
        self.lines.insert(format!(
            "{unsafety}trait {path}{}{} {{ required: {} }}",
            self.generics(&inner["generics"]),
            self.bounds_suffix(&inner["bounds"]),
            required.join(", ")
        ));
    }

    /// Inherent methods and trait implementations of a public type.
    fn impls(&mut self, inner: &Value, path: &str) {
        for id in inner["impls"].as_array().cloned().unwrap_or_default() {
            let Some(item) = self.item(&id).cloned() else {
                continue;
            };
            let imp = &item["inner"]["impl"];
            if !imp["blanket_impl"].is_null() {
                continue;
            }
            if imp["trait"].is_null() {
                for member in imp["items"].as_array().cloned().unwrap_or_default() {
                    let Some(member) = self.item(&member).cloned() else {
                        continue;
                    };
                    if member["visibility"].as_str() != Some("public") {
                        continue;
                    }
                    let name = member["name"].as_str().unwrap_or("_");
                    let (kind, m) = inner_of(&member);
                    let line = match kind {
                        "function" => format!("fn {path}::{name}{}", self.signature(m)),
                        "assoc_const" => format!("const {path}::{name}: {}", self.ty(&m["type"])),
                        other => format!("{other} {path}::{name}"),
                    };
                    self.lines.insert(line);
                }
            } else {
                let negative = if imp["is_negative"].as_bool() == Some(true) {
                    "!"
                } else {
                    ""
                };
                let unsafety = if imp["is_unsafe"].as_bool() == Some(true) {
                    "unsafe "
                } else {
                    ""
                };
                self.lines.insert(format!(
                    "impl {path}: {unsafety}{negative}{}{}",
                    self.path_type(&imp["trait"]),
                    self.where_clause(&imp["generics"]),
                ));
            }
        }
    }

    fn signature(&self, function: &Value) -> String {
        let header = &function["header"];
        let mut out = String::new();
        for (flag, word) in [
            ("is_const", "const"),
            ("is_async", "async"),
            ("is_unsafe", "unsafe"),
        ] {
            if header[flag].as_bool() == Some(true) {
                out.push_str(&format!(" [{word}]"));
            }
        }
        out.push_str(&self.generics(&function["generics"]));
        let sig = &function["sig"];
        let inputs: Vec<String> = sig["inputs"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|pair| {
                let name = pair[0].as_str().unwrap_or("_");
                let ty = self.ty(&pair[1]);
                if name == "self" {
                    match ty.as_str() {
                        "Self" => "self".to_owned(),
                        "&Self" => "&self".to_owned(),
                        "&mut Self" => "&mut self".to_owned(),
                        _ => format!("self: {ty}"),
                    }
                } else {
                    ty
                }
            })
            .collect();
        out.push_str(&format!("({})", inputs.join(", ")));
        if !sig["output"].is_null() {
            out.push_str(&format!(" -> {}", self.ty(&sig["output"])));
        }
        out.push_str(&self.where_clause(&function["generics"]));
        out
    }

    fn generics(&self, generics: &Value) -> String {
        let params: Vec<String> = generics["params"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| {
                let name = p["name"].as_str().unwrap_or("_");
                let kind = &p["kind"];
                if let Some(ty) = kind.get("type") {
                    if ty["is_synthetic"].as_bool() == Some(true) {
                        return None;
                    }
                    let default = if ty["default"].is_null() {
                        String::new()
                    } else {
                        format!(" = {}", self.ty(&ty["default"]))
                    };
                    Some(format!(
                        "{name}{}{default}",
                        self.bounds_suffix(&ty["bounds"])
                    ))
                } else if let Some(c) = kind.get("const") {
                    Some(format!("const {name}: {}", self.ty(&c["type"])))
                } else {
                    Some(name.to_owned())
                }
            })
            .collect();
        if params.is_empty() {
            String::new()
        } else {
            format!("<{}>", params.join(", "))
        }
    }

    fn where_clause(&self, generics: &Value) -> String {
        let preds: Vec<String> = generics["where_predicates"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|p| {
                if let Some(b) = p.get("bound_predicate") {
                    format!(
                        "{}{}",
                        self.ty(&b["type"]),
                        self.bounds_suffix(&b["bounds"])
                    )
                } else {
                    compact(p)
                }
            })
            .collect();
        if preds.is_empty() {
            String::new()
        } else {
            format!(" where {}", preds.join(", "))
        }
    }

    fn bounds_suffix(&self, bounds: &Value) -> String {
        let list: Vec<String> = bounds
            .as_array()
            .into_iter()
            .flatten()
            .map(|b| {
                if let Some(t) = b.get("trait_bound") {
                    let modifier = match t["modifier"].as_str() {
                        Some("maybe") => "?",
                        Some("maybe_const") => "~const ",
                        _ => "",
                    };
                    format!("{modifier}{}", self.path_type(&t["trait"]))
                } else if let Some(l) = b.get("outlives") {
                    l.as_str().unwrap_or("'_").to_owned()
                } else {
                    compact(b)
                }
            })
            .collect();
        if list.is_empty() {
            String::new()
        } else {
            format!(": {}", list.join(" + "))
        }
    }

    /// The canonical path of an item by id, from the index or the `paths` table.
    fn path_of(&self, id: &Value) -> Option<String> {
        let summary = self.paths?.get(&id_key(id))?;
        let parts: Vec<&str> = summary["path"]
            .as_array()?
            .iter()
            .filter_map(Value::as_str)
            .collect();
        Some(parts.join("::"))
    }

    fn path_type(&self, p: &Value) -> String {
        let written = p["path"]
            .as_str()
            .unwrap_or("_")
            .trim_start_matches("$crate::");
        let name = self.path_of(&p["id"]).unwrap_or_else(|| written.to_owned());
        format!("{name}{}", self.args(&p["args"]))
    }

    fn args(&self, args: &Value) -> String {
        if let Some(angle) = args.get("angle_bracketed") {
            let mut list: Vec<String> = angle["args"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|a| {
                    if let Some(t) = a.get("type") {
                        self.ty(t)
                    } else if let Some(l) = a.get("lifetime") {
                        l.as_str().unwrap_or("'_").to_owned()
                    } else if let Some(c) = a.get("const") {
                        c["expr"].as_str().unwrap_or("_").to_owned()
                    } else {
                        compact(a)
                    }
                })
                .collect();
            for c in angle["constraints"].as_array().into_iter().flatten() {
                let name = c["name"].as_str().unwrap_or("_");
                if let Some(t) = c["binding"].get("equality").and_then(|e| e.get("type")) {
                    list.push(format!("{name} = {}", self.ty(t)));
                } else if let Some(b) = c["binding"].get("constraint") {
                    list.push(format!("{name}{}", self.bounds_suffix(b)));
                } else {
                    list.push(compact(c));
                }
            }
            if list.is_empty() {
                String::new()
            } else {
                format!("<{}>", list.join(", "))
            }
        } else if let Some(paren) = args.get("parenthesized") {
            let inputs: Vec<String> = paren["inputs"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|t| self.ty(t))
                .collect();
            let output = if paren["output"].is_null() {
                String::new()
            } else {
                format!(" -> {}", self.ty(&paren["output"]))
            };
            format!("({}){output}", inputs.join(", "))
        } else {
            String::new()
        }
    }

    fn ty(&self, t: &Value) -> String {
        let Some(obj) = t.as_object() else {
            return compact(t);
        };
        let Some((kind, v)) = obj.iter().next() else {
            return "()".to_owned();
        };
        match kind.as_str() {
            "primitive" | "generic" => v.as_str().unwrap_or("_").to_owned(),
            "resolved_path" => self.path_type(v),
            "borrowed_ref" => {
                let lifetime = v["lifetime"]
                    .as_str()
                    .map(|l| format!("{l} "))
                    .unwrap_or_default();
                let mutability = if v["is_mutable"].as_bool() == Some(true) {
                    "mut "
                } else {
                    ""
                };
                format!("&{lifetime}{mutability}{}", self.ty(&v["type"]))
            }
            "raw_pointer" => {
                let mutability = if v["is_mutable"].as_bool() == Some(true) {
                    "mut"
                } else {
                    "const"
                };
                format!("*{mutability} {}", self.ty(&v["type"]))
            }
            "tuple" => {
                let list: Vec<String> = v
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|t| self.ty(t))
                    .collect();
                format!("({})", list.join(", "))
            }
            "slice" => format!("[{}]", self.ty(v)),
            "array" => format!(
                "[{}; {}]",
                self.ty(&v["type"]),
                v["len"].as_str().unwrap_or("_")
            ),
            "impl_trait" => format!("impl{}", self.bounds_suffix(v).trim_start_matches(':')),
            "dyn_trait" => {
                let list: Vec<String> = v["traits"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|p| self.path_type(&p["trait"]))
                    .collect();
                let lifetime = v["lifetime"]
                    .as_str()
                    .map(|l| format!(" + {l}"))
                    .unwrap_or_default();
                format!("dyn {}{lifetime}", list.join(" + "))
            }
            "qualified_path" => {
                let trait_part = if v["trait"].is_null() {
                    String::new()
                } else {
                    format!(" as {}", self.path_type(&v["trait"]))
                };
                format!(
                    "<{}{trait_part}>::{}{}",
                    self.ty(&v["self_type"]),
                    v["name"].as_str().unwrap_or("_"),
                    self.args(&v["args"])
                )
            }
            "infer" => "_".to_owned(),
            _ => compact(t),
        }
    }
}

fn inner_of(item: &Value) -> (&str, &Value) {
    item["inner"]
        .as_object()
        .and_then(|o| o.iter().next())
        .map_or(("unknown", &Value::Null), |(k, v)| (k.as_str(), v))
}

/// The attributes that matter to semver: `#[non_exhaustive]` (written as a suffix).
fn attrs_of(item: &Value) -> String {
    let non_exhaustive = item["attrs"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|a| a.as_str() == Some("non_exhaustive") || compact(a).contains("non_exhaustive"));
    if non_exhaustive {
        " #[non_exhaustive]".to_owned()
    } else {
        String::new()
    }
}

fn compact(v: &Value) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A rustdoc JSON document for a crate `demo` with one struct `Config` (fields as
    /// given, `#[non_exhaustive]` or not) and, optionally, a function `make`.
    fn demo(fields: &[&str], non_exhaustive: bool, with_fn: bool) -> Value {
        let mut index = serde_json::Map::new();
        let mut root_items = vec![json!(1)];
        let field_ids: Vec<Value> = (0..fields.len()).map(|i| json!(100 + i)).collect();
        for (i, name) in fields.iter().enumerate() {
            index.insert(
                (100 + i).to_string(),
                json!({"id": 100 + i, "name": name, "visibility": "public", "attrs": [],
                       "inner": {"struct_field": {"primitive": "u32"}}}),
            );
        }
        let attrs = if non_exhaustive {
            json!(["non_exhaustive"])
        } else {
            json!([])
        };
        index.insert(
            "1".into(),
            json!({"id": 1, "name": "Config", "visibility": "public", "attrs": attrs,
                   "inner": {"struct": {"kind": {"plain": {"fields": field_ids, "has_stripped_fields": false}},
                   "generics": {"params": [], "where_predicates": []}, "impls": []}}}),
        );
        if with_fn {
            root_items.push(json!(2));
            index.insert(
                "2".into(),
                json!({"id": 2, "name": "make", "visibility": "public", "attrs": [],
                       "inner": {"function": {"sig": {"inputs": [["n", {"primitive": "u32"}]],
                       "output": {"resolved_path": {"path": "Config", "id": 1, "args": null}}},
                       "generics": {"params": [], "where_predicates": []},
                       "header": {"is_const": false, "is_unsafe": false, "is_async": false}}}}),
            );
        }
        index.insert(
            "0".into(),
            json!({"id": 0, "name": "demo", "visibility": "public", "attrs": [],
                   "inner": {"module": {"is_crate": true, "items": root_items}}}),
        );
        json!({"root": 0, "index": index,
               "paths": {"1": {"crate_id": 0, "path": ["demo", "Config"], "kind": "struct"}}})
    }

    #[test]
    fn a_removed_public_fn_is_breaking() {
        let before = listing(&demo(&["a"], false, true)).unwrap();
        let after = listing(&demo(&["a"], false, false)).unwrap();
        assert!(
            before.contains(&"fn demo::make(u32) -> demo::Config".to_owned()),
            "{before:?}"
        );
        let c = compare(&before, &after);
        assert!(c.is_breaking(), "{c:?}");
        assert_eq!(
            c.removed,
            vec!["fn demo::make(u32) -> demo::Config".to_owned()]
        );
        assert!(c.added.is_empty() && c.changed.is_empty());
    }

    #[test]
    fn a_new_field_in_an_exhaustive_struct_is_breaking() {
        let before = listing(&demo(&["a"], false, false)).unwrap();
        let after = listing(&demo(&["a", "b"], false, false)).unwrap();
        let c = compare(&before, &after);
        assert!(c.is_breaking(), "{c:?}");
        assert_eq!(
            c.changed,
            vec![(
                "struct demo::Config { a: u32 }".to_owned(),
                "struct demo::Config { a: u32, b: u32 }".to_owned()
            )]
        );
    }

    #[test]
    fn a_new_field_in_a_non_exhaustive_struct_is_an_addition() {
        let before = listing(&demo(&["a"], true, false)).unwrap();
        let after = listing(&demo(&["a", "b"], true, false)).unwrap();
        let c = compare(&before, &after);
        assert!(!c.is_breaking(), "{c:?}");
        assert_eq!(c.added, vec!["field demo::Config::b: u32".to_owned()]);
    }

    #[test]
    fn making_a_struct_non_exhaustive_is_breaking() {
        let before = listing(&demo(&["a"], false, false)).unwrap();
        let after = listing(&demo(&["a"], true, false)).unwrap();
        assert!(compare(&before, &after).is_breaking());
    }

    #[test]
    fn the_same_listing_is_no_change() {
        let before = listing(&demo(&["a"], true, true)).unwrap();
        let c = compare(&before, &before);
        assert_eq!(c, Comparison::default());
        assert_eq!(c.report(), "no change\n");
    }

    #[test]
    fn item_keys_ignore_signatures_but_keep_paths() {
        assert_eq!(item_key("fn a::b::c(u32) -> x::Y"), "fn a::b::c");
        assert_eq!(item_key("struct a::B<T> { x: u32 }"), "struct a::B");
        assert_eq!(item_key("field a::B::x: u32"), "field a::B::x");
        assert_eq!(
            item_key("impl a::B: core::clone::Clone"),
            "impl a::B: core::clone::Clone"
        );
    }
}
