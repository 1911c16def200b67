#!/usr/bin/env node
// ruff.js: `ruff check --output-format=json` over Ruff's WebAssembly engine (npm
// @astral-sh/ruff-wasm-nodejs), for machines without a ruff binary. Where a real ruff is on
// PATH, ticketd uses it instead. The engine lints one source text with one set of options;
// everything around it that the ruff command does is done here, after ruff's documented
// semantics (https://docs.astral.sh/ruff/configuration/ and /settings/):
//
//   - configuration discovery: for each file the closest ruff.toml, .ruff.toml, or
//     pyproject.toml with a [tool.ruff] table in its folder or above (a pyproject.toml
//     without one is skipped); `extend` chains (relative to the file naming them, cycles
//     refused); settings at the top level (legacy) and under `lint`; target-version falling
//     back to [project].requires-python (the config's own pyproject, or the one beside a
//     ruff.toml);
//   - rule selection: select / extend-select / ignore / extend-ignore layered across
//     `extend` and the command line as ruff does (a layer's more specific selector wins);
//   - per-file-ignores / extend-per-file-ignores (globs against the path under the config's
//     folder or the file's basename, `!` negates);
//   - file selection: include / extend-include, exclude (ruff's default list) /
//     extend-exclude / lint.exclude, respect-gitignore (.gitignore inside a git repository,
//     .git/info/exclude, .ignore), force-exclude; a file named on the command line is
//     checked even when excluded unless force-exclude is set.
//
// The engine applies `# noqa` and `# ruff: noqa` itself. It does not know a file's name:
// the shim supplies what depends on it for __init__.py (D104 rather than D100, no F822
// outside preview) and for isort's first party (same package, `src`: see firstPartyFor);
// other such rules (INP001, N999, A005, stub-only PYI rules and .pyi files in general) see
// an anonymous .py module. Notebooks (.ipynb) and pyproject.toml (RUF200) are not linted;
// ~/.config/ruff and the global gitignore are not read; the shim never fixes, and the JSON's
// fix.applicability and url are null (the engine does not say). With several selection
// layers, whether a rule is on is decided here from its code (see enabled), which RUF100
// (unused noqa) cannot see.
//
// Command: `ruff check [PATH...]` with --output-format=json (the only format), --no-cache,
// --no-fix, --cache-dir, --select/--ignore/--extend-select/--extend-ignore,
// --per-file-ignores, --extend-per-file-ignores, --exclude/--extend-exclude,
// --force-exclude, --respect-gitignore, --line-length, --target-version, --preview,
// --config PATH or --config 'KEY = VALUE', --isolated, --exit-zero, -q; `ruff --version`.
// Anything else is refused. Exit status as ruff: 0 clean, 1 violations, 2 error; 127 when
// the npm packages are not installed (the tool did not start).
"use strict";
const fs = require("fs");
const path = require("path");

const installCmd = "npm ci --prefix " + __dirname;

function fail(msg) {
  process.stderr.write("ruff (wasm shim): " + msg + "\n");
  process.exit(2);
}

// requirePackage loads one of the shim's npm packages: the shim's own folder comes first
// (checks run in a sandbox whose $HOME is private and empty, so ~/.cache is not visible).
function requirePackage(name) {
  const dirs = [__dirname];
  if (process.env.RUFF_WASM_DIR) dirs.push(process.env.RUFF_WASM_DIR);
  const cache = process.env.XDG_CACHE_HOME || path.join(process.env.HOME || "/root", ".cache");
  dirs.push(path.join(cache, "ticketd", "ruff-wasm"));
  for (const d of dirs) {
    const p = path.join(d, "node_modules", name);
    if (fs.existsSync(p)) return require(p);
  }
  // 127, the shell's "command not found": ticketd reads it as a tool that did not start.
  process.stderr.write("ruff (wasm shim): the npm package " + name + " is not installed: " + installCmd + "\n");
  process.exit(127);
}

// ---------------------------------------------------------------------------------------
// Globs as ruff's (the globset crate's defaults): `*` and `?` also match `/`, `**` as a
// whole component matches any number of components, [...] / [!...] classes, {a,b}.

const globCache = new Map();

function globRegex(glob) {
  let re = globCache.get(glob);
  if (re) return re;
  let out = "";
  let i = 0;
  let inAlt = 0;
  while (i < glob.length) {
    const c = glob[i];
    if (c === "*") {
      if (glob[i + 1] === "*") {
        const atStart = i === 0 || glob[i - 1] === "/";
        const atEnd = i + 2 === glob.length || glob[i + 2] === "/";
        if (atStart && atEnd) {
          if (i === 0 && i + 2 < glob.length) { out += "(?:.*/)?"; i += 3; continue; } // **/x
          if (i + 2 === glob.length) { out += ".*"; i += 2; continue; } // x/** or **
          out += "(?:.*/)?"; i += 3; continue; // x/**/y
        }
        out += ".*"; i += 2; continue;
      }
      out += ".*"; i++; continue;
    }
    if (c === "?") { out += "."; i++; continue; }
    if (c === "[") {
      const close = glob.indexOf("]", i + 2);
      if (close < 0) { out += "\\["; i++; continue; }
      let body = glob.slice(i + 1, close);
      let neg = false;
      if (body[0] === "!" || body[0] === "^") { neg = true; body = body.slice(1); }
      out += "[" + (neg ? "^" : "") + body.replace(/[\\\]]/g, "\\$&") + "]";
      i = close + 1; continue;
    }
    if (c === "{") { out += "(?:"; inAlt++; i++; continue; }
    if (c === "}" && inAlt) { out += ")"; inAlt--; i++; continue; }
    if (c === "," && inAlt) { out += "|"; i++; continue; }
    if (c === "\\" && i + 1 < glob.length) { out += glob[i + 1].replace(/[.*+?^${}()|[\]\\/]/g, "\\$&"); i += 2; continue; }
    out += c.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
    i++;
  }
  if (inAlt) throw new Error("unclosed { in glob " + JSON.stringify(glob));
  re = new RegExp("^" + out + "$");
  globCache.set(glob, re);
  return re;
}

function globMatch(glob, s) {
  return globRegex(glob).test(s);
}

// anchored is pattern made absolute under root, normalised (ruff's normalize_path_to).
function anchored(pattern, root) {
  if (pattern.startsWith("~/")) return path.join(process.env.HOME || "/", pattern.slice(2));
  return path.resolve(root, pattern);
}

// A file pattern of exclude / include: matches the absolute path, or (for a pattern without
// a `/`, and for ruff's built-in patterns) the basename.
function filePattern(pattern, root) {
  return { abs: root === null ? pattern : anchored(pattern, root), base: pattern.includes("/") ? null : pattern };
}

function matchesAny(patterns, abs) {
  const base = path.basename(abs);
  for (const p of patterns) {
    if (globMatch(p.abs, abs) || globMatch(p.abs, base)) return true;
    if (p.base !== null && (globMatch(p.base, abs) || globMatch(p.base, base))) return true;
  }
  return false;
}

const defaultExclude = [".bzr", ".direnv", ".eggs", ".git", ".git-rewrite", ".hg", ".ipynb_checkpoints", ".mypy_cache", ".nox", ".pants.d", ".pyenv", ".pytest_cache", ".pytype", ".ruff_cache", ".svn", ".tox", ".venv", ".vscode", "__pypackages__", "_build", "buck-out", "dist", "node_modules", "site-packages", "venv"];
const defaultInclude = ["*.py", "*.pyi", "*.ipynb", "**/pyproject.toml"];
const defaultSelect = ["E4", "E7", "E9", "F"];

// ---------------------------------------------------------------------------------------
// Rule selectors, for layering select/ignore across configs and for per-file-ignores. A
// code is a linter prefix and a number (E501, PLR0913, T201, C901); a selector is ALL, a
// linter, or a prefix of a code within one linter (E matches E501, not ERA001).

const pylintGroups = ["PLC", "PLE", "PLR", "PLW"];

function letters(s) {
  return s.match(/^[A-Z]*/)[0];
}

// normSelector applies the one linter rename ruff redirects (flake8-type-checking's TCH is
// TC since 0.8).
function normSelector(sel) {
  return sel.startsWith("TCH") ? "TC" + sel.slice(3) : sel;
}

function selectorMatches(sel, code) {
  sel = normSelector(sel);
  if (sel === "ALL") return true;
  if (!code || !code.startsWith(sel)) return false;
  const sl = letters(sel), cl = letters(code);
  if (sl === cl) return true;
  return sl === "PL" && pylintGroups.includes(cl);
}

// specificity orders selectors as ruff does: ALL, then a linter, then longer prefixes.
function specificity(sel) {
  sel = normSelector(sel);
  if (sel === "ALL") return 0;
  if (sel === "PL") return 1;
  if (pylintGroups.includes(sel)) return 2;
  return 1 + sel.length - letters(sel).length + (letters(sel).startsWith("PL") ? 1 : 0);
}

// enabled decides a code through the selection layers (config chain, then the command
// line): a layer with `select` starts over, one without changes what came before; within
// a layer the most specific selector decides, an ignore beating a select of the same.
function enabled(layers, code) {
  let on = false;
  let carried = null;
  for (const layer of layers) {
    let best = -1, decision;
    const consider = (sel, value) => {
      if (!selectorMatches(sel, code)) return;
      const s = specificity(sel);
      if (s > best || (s === best && value === false)) { best = s; decision = value; }
    };
    for (const sel of (layer.select || []).concat(layer.extendSelect)) consider(sel, true);
    for (const sel of layer.ignore.concat(carried || [])) consider(sel, false);
    carried = null;
    if (layer.select) {
      on = decision === true;
      if (layer.select.length === 0 && layer.extendSelect.length === 0 && layer.ignore.length) carried = layer.ignore;
    } else if (decision !== undefined) {
      on = decision;
    }
  }
  return on;
}

// ---------------------------------------------------------------------------------------
// Configuration.

// Lint settings read at the top level (legacy) and under `lint`; the rest pass through to
// the engine as they are.
const lintKeys = new Set([
  "allowed-confusables", "dummy-variable-rgx", "extend-ignore", "extend-select", "extend-fixable",
  "extend-unfixable", "external", "fixable", "ignore", "extend-safe-fixes", "extend-unsafe-fixes",
  "ignore-init-module-imports", "logger-objects", "select", "explicit-preview-rules", "task-tags",
  "typing-modules", "unfixable", "per-file-ignores", "pydoclint", "extend-per-file-ignores", "typing-extensions",
  "allowed-unused-imports", "future-annotations",
  "flake8-annotations", "flake8-bandit", "flake8-boolean-trap", "flake8-bugbear", "flake8-builtins",
  "flake8-comprehensions", "flake8-copyright", "flake8-errmsg", "flake8-gettext",
  "flake8-implicit-str-concat", "flake8-import-conventions", "flake8-pytest-style", "flake8-quotes",
  "flake8-self", "flake8-tidy-imports", "flake8-type-checking", "flake8-unused-arguments", "isort",
  "mccabe", "pep8-naming", "pycodestyle", "pydocstyle", "pyflakes", "pylint", "pyupgrade", "ruff",
]);
// Settings the shim applies itself rather than handing to the engine.
const ownLintKeys = new Set(["select", "extend-select", "ignore", "extend-ignore", "per-file-ignores", "extend-per-file-ignores", "exclude", "fixable", "unfixable", "extend-fixable", "extend-unfixable", "extend-safe-fixes", "extend-unsafe-fixes"]);
// Top-level settings the engine takes.
// `src` is not among them: the engine cannot look at folders (see firstParty).
const engineTopKeys = ["line-length", "indent-width", "target-version", "preview", "builtins", "namespace-packages"];

function isTable(v) {
  return v !== null && typeof v === "object" && !Array.isArray(v) && !(v instanceof Date);
}

// mergeTables is child over base, sub-tables merged key by key (ruff combines the linters'
// option tables field by field across `extend`).
function mergeTables(child, base) {
  const out = Object.assign({}, base);
  for (const [k, v] of Object.entries(child)) out[k] = isTable(v) && isTable(base[k]) ? mergeTables(v, base[k]) : v;
  return out;
}

function stringList(v, what, file) {
  if (v === undefined) return undefined;
  if (!Array.isArray(v) || v.some((s) => typeof s !== "string")) fail(file + ": " + what + " must be a list of strings, got " + JSON.stringify(v));
  return v;
}

function pfiTable(v, what, file, root) {
  if (v === undefined) return undefined;
  if (!isTable(v)) fail(file + ": " + what + " must be a table of pattern = [codes], got " + JSON.stringify(v));
  const out = [];
  for (const [pat, codes] of Object.entries(v)) {
    stringList(codes, what + "." + JSON.stringify(pat), file);
    let p = pat, negated = false;
    if (p.startsWith("!")) { negated = true; p = p.slice(1); }
    out.push({ abs: anchored(p, root), base: p, negated, codes });
  }
  return out;
}

// targetVersions reads per-file-target-version: pattern = "py310", matched as per-file-ignores.
function targetVersions(v, file, root) {
  if (v === undefined) return undefined;
  if (!isTable(v)) fail(file + ": per-file-target-version must be a table of pattern = \"pyXY\", got " + JSON.stringify(v));
  return Object.entries(v).map(([p, tv]) => {
    if (typeof tv !== "string") fail(file + ": per-file-target-version." + JSON.stringify(p) + " must be a string, got " + JSON.stringify(tv));
    return { abs: anchored(p, root), base: p, version: tv };
  });
}

// minVersion is the lowest Python version a requires-python specifier allows, as ruff's
// target-version ("py38"), or undefined.
function minVersion(spec) {
  if (typeof spec !== "string") return undefined;
  let lo = null;
  for (const clause of spec.split(",")) {
    const m = clause.trim().match(/^(>=|~=|==|>|===)\s*(\d+)\.(\d+)/);
    if (!m) continue;
    let v = [parseInt(m[2], 10), parseInt(m[3], 10)];
    if (m[1] === ">" && !/^>\s*\d+\.\d+\.\d/.test(clause.trim())) v = [v[0], v[1] + 1];
    if (lo === null || v[0] > lo[0] || (v[0] === lo[0] && v[1] > lo[1])) lo = v;
  }
  if (lo === null || lo[0] !== 3) return undefined;
  return "py3" + Math.max(7, Math.min(lo[1], 14));
}

let toml;
const tomlCache = new Map();

function readToml(file) {
  if (!tomlCache.has(file)) tomlCache.set(file, parseTomlFile(file));
  return tomlCache.get(file);
}

function parseTomlFile(file) {
  let text;
  try { text = fs.readFileSync(file, "utf8"); } catch (e) { fail("cannot read " + file + ": " + e.message); }
  try { return toml.parse(text); } catch (e) { fail("cannot parse " + file + ": " + String(e.message || e).split("\n")[0]); }
}

// rawConfig is the ruff table of a config file, or null for a pyproject.toml without one.
function rawConfig(file) {
  const doc = readToml(file);
  const isPyproject = path.basename(file) === "pyproject.toml";
  const table = isPyproject ? (doc.tool && doc.tool.ruff) : doc;
  if (!isTable(table)) return null;
  const t = Object.assign({}, table);
  if (t["target-version"] === undefined) {
    let req;
    if (isPyproject) req = doc.project && doc.project["requires-python"];
    else {
      const sib = path.join(path.dirname(file), "pyproject.toml");
      if (fs.existsSync(sib)) { const d = readToml(sib); req = d.project && d.project["requires-python"]; }
    }
    const tv = minVersion(req);
    if (tv) t["target-version"] = tv;
  }
  return t;
}

// layerOf reads one config file's own settings (no `extend`), with paths anchored at its
// folder.
function layerOf(t, file) {
  const root = path.dirname(file);
  const lint = isTable(t.lint) ? t.lint : {};
  const get = (k) => (lint[k] !== undefined ? lint[k] : t[k]);
  const where = (k) => (lint[k] !== undefined ? "lint." + k : k);
  const pats = (k) => { const v = stringList(t[k], k, file); return v && v.map((p) => filePattern(p, root)); };
  const engineLint = {};
  for (const k of Object.keys(t)) if (lintKeys.has(k) && !ownLintKeys.has(k)) engineLint[k] = t[k];
  for (const [k, v] of Object.entries(lint)) {
    if (ownLintKeys.has(k)) continue;
    engineLint[k] = isTable(v) && isTable(engineLint[k]) ? mergeTables(v, engineLint[k]) : v;
  }
  const engineTop = {};
  for (const k of engineTopKeys) if (t[k] !== undefined) engineTop[k] = t[k];
  const ignore = (stringList(get("ignore"), where("ignore"), file) || []).concat(stringList(get("extend-ignore"), where("extend-ignore"), file) || []);
  return {
    file,
    selection: {
      select: stringList(get("select"), where("select"), file),
      extendSelect: stringList(get("extend-select"), where("extend-select"), file) || [],
      ignore,
    },
    perFileIgnores: pfiTable(get("per-file-ignores"), where("per-file-ignores"), file, root),
    extendPerFileIgnores: pfiTable(get("extend-per-file-ignores"), where("extend-per-file-ignores"), file, root) || [],
    exclude: pats("exclude"),
    extendExclude: pats("extend-exclude") || [],
    lintExclude: (stringList(lint.exclude, "lint.exclude", file) || []).map((p) => filePattern(p, root)),
    perFileTargetVersion: targetVersions(t["per-file-target-version"], file, root),
    src: stringList(t.src, "src", file) && t.src.map((p) => anchored(p, root)),
    root,
    include: pats("include"),
    extendInclude: pats("extend-include") || [],
    forceExclude: t["force-exclude"],
    respectGitignore: t["respect-gitignore"],
    engineTop,
    engineLint,
  };
}

// chainOf is the config file and the ones it extends, base first.
function chainOf(file, seen) {
  file = path.resolve(file);
  if (seen.includes(file)) fail("circular `extend` in configuration: " + seen.concat(file).join(" -> "));
  const t = rawConfig(file);
  if (t === null) fail(file + " has no [tool.ruff] table");
  const own = layerOf(t, file);
  if (t.extend === undefined) return [own];
  if (typeof t.extend !== "string") fail(file + ": extend must be a path, got " + JSON.stringify(t.extend));
  let base = t.extend.startsWith("~/") ? path.join(process.env.HOME || "/", t.extend.slice(2)) : path.resolve(path.dirname(file), t.extend);
  if (!fs.existsSync(base)) fail(file + ": extend names " + base + ", which does not exist");
  return chainOf(base, seen.concat(file)).concat([own]);
}

// combine folds a chain (base first) and the command line's layer into the settings one
// file is checked with.
function combine(chain, cli) {
  const layers = chain.concat(cli ? [cli] : []);
  const s = {
    files: layers.map((l) => l.file).filter(Boolean),
    selections: [{ select: defaultSelect, extendSelect: [], ignore: [] }],
    perFileIgnores: [],
    exclude: defaultExclude.map((p) => filePattern(p, null)),
    extendExclude: [],
    lintExclude: [],
    include: defaultInclude.map((p) => filePattern(p, null)),
    extendInclude: [],
    forceExclude: false,
    respectGitignore: true,
    engineTop: {},
    engineLint: {},
    perFileTargetVersion: [],
  };
  let pfi = [], extPfi = [];
  for (const l of layers) {
    s.selections.push(l.selection);
    if (l.perFileIgnores) pfi = l.perFileIgnores;
    if (l.perFileTargetVersion) s.perFileTargetVersion = l.perFileTargetVersion;
    if (l.src) s.src = l.src;
    if (l.root) s.root = l.root;
    extPfi = extPfi.concat(l.extendPerFileIgnores || []);
    if (l.exclude) s.exclude = l.exclude;
    s.extendExclude = s.extendExclude.concat(l.extendExclude || []);
    s.lintExclude = s.lintExclude.concat(l.lintExclude || []);
    if (l.include) s.include = l.include;
    s.extendInclude = s.extendInclude.concat(l.extendInclude || []);
    if (l.forceExclude !== undefined) s.forceExclude = l.forceExclude;
    if (l.respectGitignore !== undefined) s.respectGitignore = l.respectGitignore;
    s.engineTop = Object.assign(s.engineTop, l.engineTop || {});
    s.engineLint = mergeTables(l.engineLint || {}, s.engineLint);
  }
  s.perFileIgnores = pfi.concat(extPfi);
  if (!s.src) s.src = s.root ? [s.root, path.join(s.root, "src")] : [process.cwd(), path.join(process.cwd(), "src")];
  s.preview = s.engineLint.preview !== undefined ? s.engineLint.preview === true : s.engineTop.preview === true;
  return s;
}

// engineOptions is the one set of options the engine lints with. With a single selection
// layer that has `select` (the usual case) it is that layer, for the engine to resolve
// exactly. Otherwise (an `extend` chain, the command line's flags, or a layer changing
// ruff's default selection) the engine selects everything any layer selects, and the shim
// drops what the layers' order turns off; rules ruff refuses to run
// together (D203/D211, D212/D213) are resolved here first, so the engine does not drop the
// wrong one.
function engineOptions(s) {
  const opts = Object.assign({}, s.engineTop);
  const lint = Object.assign({}, s.engineLint);
  const own = s.selections.slice(1).filter((l) => l.select || l.extendSelect.length || l.ignore.length);
  if (own.length === 0) {
    lint.select = defaultSelect;
  } else if (own.length === 1 && own[0].select) {
    const l = own[0];
    lint.select = l.select;
    if (l.extendSelect.length) lint["extend-select"] = l.extendSelect;
    if (l.ignore.length) lint.ignore = l.ignore;
  } else {
    const sels = new Set();
    let start = 0;
    s.selections.forEach((l, i) => { if (l.select) start = i; });
    for (const l of s.selections.slice(start)) for (const sel of (l.select || []).concat(l.extendSelect)) sels.add(sel);
    lint.select = [...sels];
    const off = ["D203", "D211", "D212", "D213"].filter((c) => !enabled(s.selections, c));
    if (off.length) lint.ignore = off;
    s.postFilter = true;
  }
  opts.lint = lint;
  return opts;
}

// ---------------------------------------------------------------------------------------
// isort's first party. Ruff counts an import as first-party, after the user's known-*
// settings and the standard library, when it names the package the file is in (its
// package root: the topmost folder of __init__.py folders above it; detect-same-package)
// or a folder or .py module in one of `src`'s folders (default: the project's folder and
// its src/). The engine cannot look at folders: those names go to it as known-first-party,
// except the ones that come before in ruff's order (the user's known-* patterns, and what
// the engine itself does not put in the default section: the standard library).

const srcNamesCache = new Map();

function srcNames(src) {
  const key = src.join("\0");
  if (srcNamesCache.has(key)) return srcNamesCache.get(key);
  const names = new Set();
  for (const dir of src) {
    let entries;
    try { entries = fs.readdirSync(dir, { withFileTypes: true }); } catch (e) { continue; }
    for (const e of entries) {
      let isDir = e.isDirectory(), isFile = e.isFile();
      if (e.isSymbolicLink()) { try { const st = fs.statSync(path.join(dir, e.name)); isDir = st.isDirectory(); isFile = st.isFile(); } catch (err) { continue; } }
      if (isDir && /^[A-Za-z_][A-Za-z0-9_]*$/.test(e.name)) names.add(e.name);
      else if (isFile && /^[A-Za-z_][A-Za-z0-9_]*\.py$/.test(e.name)) names.add(e.name.slice(0, -3));
    }
  }
  srcNamesCache.set(key, names);
  return names;
}

const packageRoots = new Map();

// packageRoot is the topmost folder of the chain of __init__.py folders holding dir, or null.
function packageRoot(dir, namespacePackages) {
  if (packageRoots.has(dir)) return packageRoots.get(dir);
  const isPkg = (d) => fs.existsSync(path.join(d, "__init__.py")) || namespacePackages.includes(d);
  let r = null;
  if (isPkg(dir)) r = path.dirname(dir) === dir ? dir : packageRoot(path.dirname(dir), namespacePackages) || dir;
  packageRoots.set(dir, r);
  return r;
}

function simpleGlob(pattern, name) {
  return new RegExp("^" + pattern.replace(/[.+^${}()|\\]/g, "\\$&").replace(/\*/g, ".*").replace(/\?/g, ".") + "$").test(name);
}

// defaultSection reports whether the engine, as configured, puts `import name` in the
// default section (third party): it asks it to sort `import name` apart from a module
// nobody knows.
function defaultSection(s, opts, name) {
  const isort = Object.assign({}, opts.lint.isort || {});
  const probeOpts = { "target-version": opts["target-version"], lint: { select: ["I001"], isort } };
  const key = JSON.stringify(probeOpts);
  let p = s.probes.get(key);
  if (!p) { p = { ws: workspaceFor(s, probeOpts), names: new Map() }; s.probes.set(key, p); }
  if (!p.names.has(name)) p.names.set(name, p.ws.check("import " + name + "\n\nimport zzzzzzzz_ticketd_probe\n").length > 0);
  return p.names.get(name);
}

function firstPartyFor(s, opts, abs) {
  const isort = opts.lint.isort || {};
  const names = new Set(srcNames(s.src));
  if (isort["detect-same-package"] !== false) {
    const ns = (s.engineTop["namespace-packages"] || []).map((p) => anchored(p, s.root || process.cwd()));
    const root = packageRoot(path.dirname(abs), ns);
    if (root) names.add(path.basename(root));
  }
  const known = [];
  for (const k of ["known-first-party", "known-third-party", "known-local-folder", "extra-standard-library"]) known.push(...(isort[k] || []));
  for (const mods of Object.values(isort.sections || {})) known.push(...mods);
  return [...names].filter((n) => !known.some((p) => simpleGlob(p, n)) && defaultSection(s, opts, n)).sort();
}

// ---------------------------------------------------------------------------------------
// Settings per folder: the closest config file in the folder or above.

const configNames = ["ruff.toml", ".ruff.toml", "pyproject.toml"];
const dirConfigs = new Map();

function configIn(dir) {
  if (dirConfigs.has(dir)) return dirConfigs.get(dir);
  let found = null;
  for (const n of configNames) {
    const f = path.join(dir, n);
    let st;
    try { st = fs.statSync(f); } catch (e) { continue; }
    if (!st.isFile()) continue;
    if (n === "pyproject.toml" && rawConfig(f) === null) continue;
    found = f;
    break;
  }
  dirConfigs.set(dir, found);
  return found;
}

function closestConfig(dir) {
  for (let d = dir; ; d = path.dirname(d)) {
    const c = configIn(d);
    if (c) return c;
    if (path.dirname(d) === d) return null;
  }
}

// closestRequiresPython is the target version of the closest pyproject.toml above dir, for
// files no config file covers (ruff 0.10+).
const requiresPython = new Map();

function closestRequiresPython(dir) {
  if (requiresPython.has(dir)) return requiresPython.get(dir);
  let v;
  const f = path.join(dir, "pyproject.toml");
  if (fs.existsSync(f)) { const doc = readToml(f); v = minVersion(doc.project && doc.project["requires-python"]); }
  if (v === undefined && path.dirname(dir) !== dir) v = closestRequiresPython(path.dirname(dir));
  requiresPython.set(dir, v);
  return v;
}

let ruffEngine;
const settingsCache = new Map();

function settingsFor(configFile, cli, dirForDefaults) {
  const tv = configFile ? undefined : closestRequiresPython(dirForDefaults);
  const key = configFile || "<defaults:" + tv + ">";
  if (settingsCache.has(key)) return settingsCache.get(key);
  let chain;
  if (configFile) chain = chainOf(configFile, []);
  else chain = tv ? [{ selection: { extendSelect: [], ignore: [] }, engineTop: { "target-version": tv } }] : [];
  const s = combine(chain, cli);
  s.options = engineOptions(s);
  s.workspaces = new Map();
  s.probes = new Map();
  workspaceFor(s, s.options); // the settings' errors, before any file
  // Selectors the engine is not handed (per-file-ignores, and the ignores of a layered
  // selection) are still checked, as ruff refuses an unknown one.
  const unchecked = new Set(s.perFileIgnores.flatMap((e) => e.codes));
  if (s.postFilter) for (const l of s.selections) for (const c of l.ignore) unchecked.add(c);
  if (unchecked.size) {
    try { new ruffEngine.Workspace({ lint: { select: [], ignore: [...unchecked] } }, ruffEngine.PositionEncoding.Utf16).free(); } catch (e) {
      fail("invalid rule selector in the per-file-ignores or ignores of " + (s.files.join(", ") || "the command line") + ": " + String(e.message || e));
    }
  }
  settingsCache.set(key, s);
  return s;
}

// workspaceFor is the engine with opts, made once per settings and options.
function workspaceFor(s, opts) {
  const key = JSON.stringify(opts);
  if (s.workspaces.has(key)) return s.workspaces.get(key);
  let ws;
  try { ws = new ruffEngine.Workspace(opts, ruffEngine.PositionEncoding.Utf16); } catch (e) {
    fail("invalid settings from " + (s.files.join(", ") || "the defaults") + ": " + String(e.message || e) + " (engine options: " + JSON.stringify(opts) + ")");
  }
  s.workspaces.set(key, ws);
  return ws;
}

// workspaceForFile is the engine for one file: per-file-target-version (the first pattern
// matching the file's path under the config's folder or its basename), and isort's first
// party for where the file is.
function workspaceForFile(s, abs) {
  const base = path.basename(abs);
  let opts = s.options;
  for (const e of s.perFileTargetVersion) {
    if (globMatch(e.base, base) || globMatch(e.abs, abs)) { opts = Object.assign({}, opts, { "target-version": e.version }); break; }
  }
  const fp = firstPartyFor(s, opts, abs);
  if (fp.length) {
    const isort = Object.assign({}, opts.lint.isort || {});
    isort["known-first-party"] = (isort["known-first-party"] || []).concat(fp);
    opts = Object.assign({}, opts, { lint: Object.assign({}, opts.lint, { isort }) });
  }
  return workspaceFor(s, opts);
}

// ---------------------------------------------------------------------------------------
// .gitignore, .ignore and .git/info/exclude, as ruff's walker (the `ignore` crate) reads
// them: git's files only inside a git repository, deeper files before shallower ones.

let ignoreLib;
const ignoreCache = new Map();

const gitRoots = new Map();

function gitRoot(dir) {
  if (gitRoots.has(dir)) return gitRoots.get(dir);
  let r;
  if (fs.existsSync(path.join(dir, ".git"))) r = dir;
  else r = path.dirname(dir) === dir ? null : gitRoot(path.dirname(dir));
  gitRoots.set(dir, r);
  return r;
}

function ignoreFilesIn(dir, inGit, isGitRoot) {
  const key = dir + "\0" + inGit;
  if (ignoreCache.has(key)) return ignoreCache.get(key);
  const out = [];
  const add = (f) => {
    let text;
    try { text = fs.readFileSync(f, "utf8"); } catch (e) { return; }
    out.push(ignoreLib().add(text));
  };
  add(path.join(dir, ".ignore"));
  if (inGit) {
    add(path.join(dir, ".gitignore"));
    if (isGitRoot) add(path.join(dir, ".git", "info", "exclude"));
  }
  ignoreCache.set(key, out);
  return out;
}

// gitignored reports whether abs (a folder when isDir) is ignored by the ignore files of
// its folders, from its own folder up to the repository root (or the file system's).
function gitignored(abs, isDir) {
  const git = gitRoot(path.dirname(abs));
  for (let d = path.dirname(abs); ; d = path.dirname(d)) {
    let rel = path.relative(d, abs);
    if (isDir) rel += "/";
    for (const ig of ignoreFilesIn(d, git !== null, d === git)) {
      const r = ig.test(rel);
      if (r.ignored) return true;
      if (r.unignored) return false;
    }
    if (d === git || path.dirname(d) === d) return false;
  }
}

// ---------------------------------------------------------------------------------------
// File collection.

function excluded(s, abs) {
  return matchesAny(s.exclude, abs) || matchesAny(s.extendExclude, abs);
}

// forceExcluded: with force-exclude, a path named on the command line is dropped when it
// or a folder above it (up to the config's folder) is excluded.
function forceExcluded(s, abs) {
  const stop = s.files.length ? path.dirname(s.files[s.files.length - 1]) : path.parse(abs).root;
  for (let p = abs; ; p = path.dirname(p)) {
    if (excluded(s, p)) return true;
    if (p === stop || path.dirname(p) === p) return false;
  }
}

function settingsAt(dir, opts) {
  const cfg = opts.config || (opts.isolated ? null : closestConfig(dir));
  return settingsFor(cfg, opts.cli, dir);
}

function walk(dir, opts, out) {
  let names;
  try { names = fs.readdirSync(dir).sort(); } catch (e) { fail("cannot read " + dir + ": " + e.message); }
  const s = settingsAt(dir, opts);
  for (const name of names) {
    const child = path.join(dir, name);
    let st;
    try { st = fs.lstatSync(child); } catch (e) { continue; }
    if (st.isSymbolicLink()) {
      try { st = fs.statSync(child); } catch (e) { continue; }
      if (st.isDirectory()) continue; // ruff's walker does not follow links to folders
    }
    const cs = st.isDirectory() ? settingsAt(child, opts) : s;
    if (excluded(cs, child)) continue;
    if (cs.respectGitignore && gitignored(child, st.isDirectory())) continue;
    if (st.isDirectory()) { walk(child, opts, out); continue; }
    if (!st.isFile()) continue;
    if (!matchesAny(cs.include, child) && !matchesAny(cs.extendInclude, child)) continue;
    if (!child.endsWith(".py") && !child.endsWith(".pyi")) continue; // see the header: no notebooks, no pyproject.toml
    if (matchesAny(cs.lintExclude, child)) continue;
    out.push({ file: child, settings: cs });
  }
}

function collect(p, opts, out) {
  const abs = path.resolve(p);
  let st;
  try { st = fs.statSync(abs); } catch (e) { fail("cannot read " + p + ": " + e.message); }
  const s = settingsAt(st.isDirectory() ? abs : path.dirname(abs), opts);
  if (s.forceExclude && forceExcluded(s, abs)) return;
  if (st.isDirectory()) walk(abs, opts, out);
  else if (!(s.forceExclude && matchesAny(s.lintExclude, abs))) out.push({ file: abs, settings: s });
}

// perFileIgnored is the per-file-ignores entries' codes that apply to abs.
function perFileIgnored(s, abs) {
  const base = path.basename(abs);
  const codes = [];
  for (const e of s.perFileIgnores) {
    const hit = globMatch(e.base, base) || globMatch(e.abs, abs);
    if (hit !== e.negated) codes.push(...e.codes);
  }
  return codes;
}

// ---------------------------------------------------------------------------------------
// The command line.

function parseArgs(argv) {
  const o = { paths: [], cli: null, config: null, isolated: false, exitZero: false, overrides: [] };
  const cli = { file: null, selection: { extendSelect: [], ignore: [] }, extendPerFileIgnores: [], extendExclude: [], engineTop: {}, engineLint: {} };
  let used = false;
  const list = (v) => v.split(",").map((x) => x.trim()).filter(Boolean);
  for (let i = 0; i < argv.length; i++) {
    let a = argv[i];
    let val = null;
    const eq = a.indexOf("=");
    if (a.startsWith("--") && eq > 0) { val = a.slice(eq + 1); a = a.slice(0, eq); }
    const takesValue = ["--output-format", "--cache-dir", "--select", "--ignore", "--extend-select", "--extend-ignore", "--per-file-ignores", "--extend-per-file-ignores", "--exclude", "--extend-exclude", "--line-length", "--target-version", "--config"];
    if (takesValue.includes(a) && val === null) {
      if (i + 1 >= argv.length) fail(a + " needs a value");
      val = argv[++i];
    } else if (!takesValue.includes(a) && val !== null) {
      fail("unsupported option " + argv[i]);
    }
    switch (a) {
      case "--output-format": if (val !== "json") fail("only --output-format=json is supported, got " + val); break;
      case "--no-cache": case "--cache-dir": case "--no-fix": case "--quiet": case "-q": case "--silent": case "-s": case "--no-show-fixes": case "--no-unsafe-fixes": break;
      case "--exit-zero": case "-e": o.exitZero = true; break;
      case "--isolated": o.isolated = true; break;
      case "--select": cli.selection.select = list(val); used = true; break;
      case "--ignore": cli.selection.ignore = cli.selection.ignore.concat(list(val)); used = true; break;
      case "--extend-select": cli.selection.extendSelect = cli.selection.extendSelect.concat(list(val)); used = true; break;
      case "--extend-ignore": cli.selection.ignore = cli.selection.ignore.concat(list(val)); used = true; break;
      case "--per-file-ignores": case "--extend-per-file-ignores": {
        const m = val.match(/^([^:]+):(.+)$/);
        if (!m) fail(a + " takes PATTERN:CODES, got " + val);
        let p = m[1], negated = false;
        if (p.startsWith("!")) { negated = true; p = p.slice(1); }
        const entry = { abs: anchored(p, process.cwd()), base: p, negated, codes: list(m[2]) };
        if (a === "--per-file-ignores") cli.perFileIgnores = (cli.perFileIgnores || []).concat(entry);
        else cli.extendPerFileIgnores.push(entry);
        used = true; break;
      }
      case "--exclude": cli.exclude = (cli.exclude || []).concat(list(val).map((p) => filePattern(p, process.cwd()))); used = true; break;
      case "--extend-exclude": cli.extendExclude = cli.extendExclude.concat(list(val).map((p) => filePattern(p, process.cwd()))); used = true; break;
      case "--force-exclude": cli.forceExclude = true; used = true; break;
      case "--no-force-exclude": cli.forceExclude = false; used = true; break;
      case "--respect-gitignore": cli.respectGitignore = true; used = true; break;
      case "--no-respect-gitignore": cli.respectGitignore = false; used = true; break;
      case "--preview": cli.engineTop.preview = true; used = true; break;
      case "--no-preview": cli.engineTop.preview = false; used = true; break;
      case "--line-length": {
        const n = Number(val);
        if (!Number.isInteger(n) || n < 1) fail("--line-length takes a positive number, got " + val);
        cli.engineTop["line-length"] = n; used = true; break;
      }
      case "--target-version": cli.engineTop["target-version"] = val; used = true; break;
      case "--config": {
        const asFile = path.resolve(val);
        if (fs.existsSync(asFile) && fs.statSync(asFile).isFile()) { o.config = asFile; break; }
        if (!val.includes("=")) fail("--config " + val + ": no such file, and not a KEY = VALUE setting");
        let t;
        try { t = toml.parse(val); } catch (e) { fail("--config " + JSON.stringify(val) + " is not a TOML setting: " + String(e.message || e).split("\n")[0]); }
        o.overrides.push(t);
        break;
      }
      default:
        if (a.startsWith("-") && a !== "-") fail("unsupported option " + argv[i] + " (the wasm shim takes: " + takesValue.join(", ") + ", --no-cache, --no-fix, --exit-zero, --isolated, --force-exclude, --[no-]respect-gitignore, --[no-]preview, -q)");
        if (a === "-") fail("reading from stdin is not supported");
        o.paths.push(argv[i]);
    }
  }
  // --config KEY=VALUE overrides the configuration, as the last layer before the flags.
  if (o.overrides.length) {
    let t = {};
    for (const x of o.overrides) t = mergeTables(x, t);
    const ol = layerOf(t, path.join(process.cwd(), "--config"));
    ol.file = null;
    o.overridesLayer = ol;
  }
  if (used) o.cliOnly = cli;
  return o;
}

function main(argv) {
  if (argv[0] === "--version" || argv[0] === "version" || argv[0] === "-V") {
    ruffEngine = requirePackage("@astral-sh/ruff-wasm-nodejs");
    process.stdout.write("ruff " + ruffEngine.Workspace.version() + " (wasm)\n");
    return 0;
  }
  if (argv[0] !== "check") fail("only `ruff check` is supported, got: " + argv.join(" "));
  toml = requirePackage("smol-toml");
  ignoreLib = requirePackage("ignore");
  ruffEngine = requirePackage("@astral-sh/ruff-wasm-nodejs");
  const o = parseArgs(argv.slice(1));
  // The command line's layers: --config overrides, then the flags.
  const cliLayers = [o.overridesLayer, o.cliOnly].filter(Boolean);
  o.cli = cliLayers.length ? cliLayers.reduce((a, b) => mergeLayers(a, b)) : null;
  if (o.paths.length === 0) o.paths.push(".");

  const files = [];
  for (const p of o.paths) collect(p, o, files);
  const seen = new Set();
  const out = [];
  for (const { file, settings: s } of files) {
    if (seen.has(file)) continue;
    seen.add(file);
    let text;
    try { text = fs.readFileSync(file, "utf8"); } catch (e) { fail("cannot read " + file + ": " + e.message); }
    let diags;
    try { diags = workspaceForFile(s, file).check(text); } catch (e) { fail("check " + file + ": " + e); }
    const pfi = perFileIgnored(s, file);
    const isInit = path.basename(file) === "__init__.py";
    for (const d of diags) {
      // What the engine cannot tell without the file's name: in a package's __init__.py,
      // F822 is for preview only, and a missing docstring is D104, not D100.
      if (isInit && d.code === "F822" && !s.preview) continue;
      if (isInit && d.code === "D100") {
        if (!enabled(s.selections, "D104")) continue;
        d.code = "D104";
        d.message = "Missing docstring in public package";
      }
      if (d.code && s.postFilter && !enabled(s.selections, d.code)) continue;
      if (d.code && pfi.some((sel) => selectorMatches(sel, d.code))) continue;
      out.push({
        cell: null, code: d.code, end_location: d.end_location, filename: file,
        // The engine does not say whether a fix is safe: applicability stays unknown (null).
        fix: d.fix ? { applicability: null, edits: d.fix.edits.map((e) => ({ content: e.content, end_location: e.end_location, location: e.location })), message: d.fix.message } : null,
        location: d.start_location, message: d.message,
        noqa_row: d.start_location ? d.start_location.row : null, url: null,
      });
    }
  }
  out.sort((a, b) => (a.filename < b.filename ? -1 : a.filename > b.filename ? 1 : 0) ||
    (a.location.row - b.location.row) || (a.location.column - b.location.column) || String(a.code).localeCompare(String(b.code)));
  process.stdout.write(JSON.stringify(out, null, 2) + "\n");
  return out.length > 0 && !o.exitZero ? 1 : 0;
}

// mergeLayers folds two command-line layers (--config overrides, then flags) into one.
function mergeLayers(a, b) {
  const sel = {
    select: b.selection.select || a.selection.select,
    extendSelect: a.selection.extendSelect.concat(b.selection.extendSelect),
    ignore: a.selection.ignore.concat(b.selection.ignore),
  };
  return {
    file: null, selection: sel,
    perFileIgnores: b.perFileIgnores || a.perFileIgnores,
    extendPerFileIgnores: (a.extendPerFileIgnores || []).concat(b.extendPerFileIgnores || []),
    exclude: b.exclude || a.exclude,
    extendExclude: (a.extendExclude || []).concat(b.extendExclude || []),
    lintExclude: (a.lintExclude || []).concat(b.lintExclude || []),
    include: b.include || a.include,
    extendInclude: (a.extendInclude || []).concat(b.extendInclude || []),
    forceExclude: b.forceExclude !== undefined ? b.forceExclude : a.forceExclude,
    respectGitignore: b.respectGitignore !== undefined ? b.respectGitignore : a.respectGitignore,
    engineTop: Object.assign({}, a.engineTop, b.engineTop),
    engineLint: mergeTables(b.engineLint || {}, a.engineLint || {}),
  };
}

process.exitCode = main(process.argv.slice(2));
