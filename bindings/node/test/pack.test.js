// Finding 1 of issue 48: `npm pack`'s tarball could not be installed (the native crate
// reached ../../../wire, outside the package, and native/Cargo.lock was not packed). The
// tarball must hold every crate the native build reaches. With DUETIME_PACK_INSTALL=1 the
// tarball, packed after a build so it carries duetime.node, is also installed into a fresh
// project on a PATH without cargo (issue 48, item 4) and used there. CI runs the whole test
// suite against such an install too (.ci/run, DUETIME_PACKAGE).
'use strict';
const { test } = require('node:test');
const assert = require('node:assert/strict');
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const pkg = path.join(__dirname, '..');
const npm = (args, cwd) => execFileSync('npm', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });

test('the packed files hold every crate the native build reaches, and its lock', () => {
  const [{ files }] = JSON.parse(npm(['pack', '--dry-run', '--json', '--ignore-scripts=false'], pkg));
  const packed = new Set(files.map((f) => f.path));
  assert.ok(packed.has('duetime.node'), 'the built module is not packed (node build.js first)');
  for (const f of ['native/Cargo.lock', 'native/src/lib.rs', 'vendor/duetime/src/lib.rs', 'vendor/duetime-wire/src/lib.rs', 'build.js']) {
    assert.ok(packed.has(f), `${f} is not packed`);
  }
  const manifests = [...packed].filter((f) => f.endsWith('Cargo.toml'));
  assert.ok(manifests.length >= 3, manifests.join(' '));
  for (const manifest of manifests) {
    const text = fs.readFileSync(path.join(pkg, manifest), 'utf8');
    for (const [, dep] of text.matchAll(/path\s*=\s*"([^"]+)"/g)) {
      const target = path.posix.normalize(path.posix.join(path.posix.dirname(manifest), dep, 'Cargo.toml'));
      assert.ok(!target.startsWith('..'), `${manifest} reaches ${dep}, outside the package`);
      assert.ok(packed.has(target), `${manifest} reaches ${dep}, whose ${target} is not packed`);
    }
  }
});

test('the tarball installs into a fresh project and runs', { skip: !process.env.DUETIME_PACK_INSTALL }, () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'duetime-pack-'));
  const [{ filename }] = JSON.parse(npm(['pack', '--json', '--pack-destination', dir], pkg));
  const project = path.join(dir, 'project');
  fs.mkdirSync(project);
  npm(['init', '-y'], project);
  const noCargo = process.env.PATH.split(path.delimiter).filter((d) => !fs.existsSync(path.join(d, 'cargo'))).join(path.delimiter);
  execFileSync('npm', ['install', '--foreground-scripts', path.join(dir, filename)], { cwd: project, stdio: 'ignore', env: { ...process.env, PATH: noCargo } });
  const script = `const { Core } = require('duetime');
    const core = new Core();
    const def = { name: 'hello', schedule: { kind: 'every', period: 60000, offset: 0 } };
    const effects = core.step({ wall: 1750000020000, mono: 0 }, { event: 'upsert', def, actor: 'me' });
    process.stdout.write(effects.at(-1).view.name);`;
  assert.equal(execFileSync(process.execPath, ['-e', script], { cwd: project, encoding: 'utf8' }), 'hello');
  fs.rmSync(dir, { recursive: true, force: true });
});
