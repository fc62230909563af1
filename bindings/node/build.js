// Builds the native module from source with cargo and copies the cdylib to duetime.node
// (what napi-rs's CLI does, without it): `node build.js [--debug] [--vendor-only]`.
//
// The native crate depends on the core and the wire crates through `vendor/` (issue 48:
// `npm pack`'s tarball reached `../../../wire`, which is not in it, so it could not be
// installed). Run inside the repository, this script first copies them there from the
// repository's own sources (their `src/` and a manifest of what building needs: no
// workspace, tests or benches); the tarball carries `vendor/` as it was packed, so an
// install builds from what it holds. `--vendor-only` copies and stops (CI's format check
// of the native crate needs the manifests before any build). `--prebuilt-ok` (the
// package's install script) keeps a `duetime.node` the tarball carries, so a tarball packed
// after a build installs without cargo on the installing machine (same platform and Node
// ABI range: Node-API 4, any Node from 18); inside the repository it always builds.
'use strict';
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const repo = path.join(__dirname, '..', '..');
const vendor = path.join(__dirname, 'vendor');

/** Whether this is the package inside the repository (not an installed copy). */
function inRepository() {
  return ['wire/src/core.rs', 'src/step/clock.rs', 'Cargo.toml'].every((f) => fs.existsSync(path.join(repo, f)));
}

/**
 * A manifest's sections that building the crate needs ([package] without what packaging
 * alone reads, [dependencies], [features]), path dependencies rewritten by `paths`.
 */
function buildManifest(file, paths) {
  const sections = fs.readFileSync(file, 'utf8').split(/^(?=\[)/m);
  const keep = sections.filter((s) => /^\[(package|dependencies|features)\]/.test(s));
  let text = keep.join('\n').replace(/^(readme|include|keywords|categories)\s*=.*$/gm, '');
  for (const [from, to] of Object.entries(paths)) text = text.split(`path = "${from}"`).join(`path = "${to}"`);
  return `# Copied by build.js from the repository for the npm package: do not edit.\n${text}`;
}

function copyCrate(from, name, paths) {
  const to = path.join(vendor, name);
  fs.rmSync(to, { recursive: true, force: true });
  fs.mkdirSync(to, { recursive: true });
  fs.cpSync(path.join(from, 'src'), path.join(to, 'src'), { recursive: true });
  fs.writeFileSync(path.join(to, 'Cargo.toml'), buildManifest(path.join(from, 'Cargo.toml'), paths));
}

function vendorSources() {
  copyCrate(repo, 'duetime', {});
  copyCrate(path.join(repo, 'wire'), 'duetime-wire', { '..': '../duetime' });
}

const built = path.join(__dirname, 'duetime.node');
const prebuilt = process.argv.includes('--prebuilt-ok') && !inRepository() && fs.existsSync(built);
if (inRepository()) vendorSources();
if (prebuilt) {
  console.error('duetime.node carried by the package: not built');
} else if (!process.argv.includes('--vendor-only')) {
  const release = !process.argv.includes('--debug');
  const native = path.join(__dirname, 'native');
  const args = ['build', '--manifest-path', path.join(native, 'Cargo.toml')];
  if (release) args.push('--release');
  execFileSync('cargo', args, { stdio: 'inherit' });
  const target = process.env.CARGO_TARGET_DIR || path.join(native, 'target');
  const file = { darwin: 'libduetime_node.dylib', win32: 'duetime_node.dll' }[process.platform] || 'libduetime_node.so';
  fs.copyFileSync(path.join(target, release ? 'release' : 'debug', file), built);
  console.error('built duetime.node');
}
