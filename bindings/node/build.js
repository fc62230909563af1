// Builds the native module from source with cargo and copies the cdylib to duetime.node
// (what napi-rs's CLI does, without it): `node build.js [--debug]`.
'use strict';
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const release = !process.argv.includes('--debug');
const native = path.join(__dirname, 'native');
const args = ['build', '--manifest-path', path.join(native, 'Cargo.toml')];
if (release) args.push('--release');
execFileSync('cargo', args, { stdio: 'inherit' });
const target = process.env.CARGO_TARGET_DIR || path.join(native, 'target');
const file = { darwin: 'libduetime_node.dylib', win32: 'duetime_node.dll' }[process.platform] || 'libduetime_node.so';
fs.copyFileSync(path.join(target, release ? 'release' : 'debug', file), path.join(__dirname, 'duetime.node'));
console.error('built duetime.node');
