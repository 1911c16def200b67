#!/usr/bin/env node
// ruff.js: a small `ruff check --output-format=json` over Ruff's WebAssembly engine
// (npm @astral-sh/ruff-wasm-nodejs), for machines without a ruff binary. Where a real ruff
// is on PATH, ticketd uses it instead. Supported: `ruff check [--output-format=json]
// [--no-cache] [--select CODES] [--ignore CODES] [PATH...]`, and `ruff --version`.
// Settings: ruff's defaults, plus `select`/`ignore`/`line-length` read from [tool.ruff] /
// [tool.ruff.lint] in pyproject.toml or from ruff.toml in the current folder (simple
// one-line TOML values only). Exit status as ruff: 0 clean, 1 violations, 2 error.
"use strict";
const fs = require("fs");
const path = require("path");

function loadEngine() {
  // The shim's own folder comes first: checks run in a sandbox whose $HOME is private and
  // empty, so an engine under ~/.cache is not visible there.
  const dirs = [__dirname];
  if (process.env.RUFF_WASM_DIR) dirs.push(process.env.RUFF_WASM_DIR);
  const cache = process.env.XDG_CACHE_HOME || path.join(process.env.HOME || "/root", ".cache");
  dirs.push(path.join(cache, "ticketd", "ruff-wasm"));
  for (const d of dirs) {
    const p = path.join(d, "node_modules", "@astral-sh", "ruff-wasm-nodejs");
    if (fs.existsSync(p)) return require(p);
  }
  // 127, the shell's "command not found": ticketd reads it as a tool that did not start.
  process.stderr.write("ruff (wasm shim): the Ruff engine is not installed: npm install --prefix " + __dirname + " @astral-sh/ruff-wasm-nodejs\n");
  process.exit(127);
}

function fail(msg) {
  process.stderr.write("ruff (wasm shim): " + msg + "\n");
  process.exit(2);
}

function tomlList(v) {
  const m = v.match(/\[(.*)\]/);
  if (!m) return null;
  return m[1].split(",").map((s) => s.trim().replace(/^["']|["']$/g, "")).filter(Boolean);
}

// readSettings reads the few settings the shim honours from the project's config.
function readSettings() {
  const out = {};
  let text = null, sections = null;
  if (fs.existsSync("ruff.toml")) { text = fs.readFileSync("ruff.toml", "utf8"); sections = ["", "lint"]; }
  else if (fs.existsSync(".ruff.toml")) { text = fs.readFileSync(".ruff.toml", "utf8"); sections = ["", "lint"]; }
  else if (fs.existsSync("pyproject.toml")) { text = fs.readFileSync("pyproject.toml", "utf8"); sections = ["tool.ruff", "tool.ruff.lint"]; }
  if (text === null) return out;
  let section = "";
  for (const raw of text.split("\n")) {
    const line = raw.replace(/#.*$/, "").trim();
    const h = line.match(/^\[([^\]]+)\]$/);
    if (h) { section = h[1].trim(); continue; }
    if (!sections.includes(section)) continue;
    const kv = line.match(/^([A-Za-z-]+)\s*=\s*(.+)$/);
    if (!kv) continue;
    const [, k, v] = kv;
    if (k === "select" || k === "ignore" || k === "extend-select") {
      const list = tomlList(v);
      if (list) out[k] = list;
    } else if (k === "line-length") {
      out["line-length"] = parseInt(v, 10);
    }
  }
  return out;
}

const skipDirs = new Set([".git", ".venv", "venv", "node_modules", "__pycache__", ".mypy_cache", ".ruff_cache", ".tox", "build", "dist"]);

function collect(p, out) {
  let st;
  try { st = fs.statSync(p); } catch (e) { fail("cannot read " + p + ": " + e.message); }
  if (st.isDirectory()) {
    for (const name of fs.readdirSync(p).sort()) {
      if (skipDirs.has(name)) continue;
      const child = path.join(p, name);
      const cst = fs.lstatSync(child);
      if (cst.isSymbolicLink()) continue;
      if (cst.isDirectory() || name.endsWith(".py") || name.endsWith(".pyi")) collect(child, out);
    }
  } else if (p.endsWith(".py") || p.endsWith(".pyi")) {
    out.push(p);
  }
}

function main(argv) {
  if (argv[0] === "--version" || argv[0] === "version") {
    const r = loadEngine();
    process.stdout.write("ruff " + r.Workspace.version() + " (wasm)\n");
    return 0;
  }
  if (argv[0] !== "check") fail("only `ruff check` is supported, got: " + argv.join(" "));
  const paths = [];
  const settings = readSettings();
  for (let i = 1; i < argv.length; i++) {
    const a = argv[i];
    // --no-fix: the shim never fixes.
    if (a === "--output-format=json" || a === "--no-cache" || a === "--no-fix" || a === "--quiet" || a === "-q") continue;
    if (a === "--output-format") { if (argv[++i] !== "json") fail("only --output-format=json is supported"); continue; }
    if (a === "--select" || a === "--ignore") { settings[a.slice(2)] = argv[++i].split(","); continue; }
    if (a.startsWith("--select=") || a.startsWith("--ignore=")) { const [k, v] = a.slice(2).split("="); settings[k] = v.split(","); continue; }
    if (a.startsWith("-")) fail("unsupported option " + a);
    paths.push(a);
  }
  if (paths.length === 0) paths.push(".");
  const r = loadEngine();
  const opts = {};
  if (settings["line-length"]) opts["line-length"] = settings["line-length"];
  // The engine's own default differs from the ruff command's; use the command's.
  const lint = { select: ["E4", "E7", "E9", "F"] };
  for (const k of ["select", "ignore", "extend-select"]) if (settings[k]) lint[k] = settings[k];
  if (Object.keys(lint).length) opts.lint = lint;
  let ws;
  try { ws = new r.Workspace(opts, r.PositionEncoding.Utf16); } catch (e) { fail("bad settings " + JSON.stringify(opts) + ": " + e); }
  const files = [];
  for (const p of paths) collect(p, files);
  const out = [];
  for (const f of files) {
    const abs = path.resolve(f);
    let diags;
    try { diags = ws.check(fs.readFileSync(f, "utf8")); } catch (e) { fail("check " + f + ": " + e); }
    for (const d of diags) {
      out.push({
        code: d.code, message: d.message, filename: abs,
        location: d.start_location, end_location: d.end_location,
        fix: d.fix, url: null, noqa_row: d.start_location ? d.start_location.row : null,
      });
    }
  }
  process.stdout.write(JSON.stringify(out, null, 2) + "\n");
  return out.length > 0 ? 1 : 0;
}

process.exitCode = main(process.argv.slice(2));
