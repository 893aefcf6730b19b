'use strict';

const test = require('node:test');
const assert = require('node:assert');
const { escapeHtml, render, Engine } = require('../src/index');

test('escapeHtml escapes markup characters', () => {
  assert.strictEqual(escapeHtml('<a href="x">&</a>'), '&lt;a href&#x3D;&quot;x&quot;&gt;&amp;&lt;&#x2F;a&gt;');
});

test('escapeHtml escapes quotes and backticks', () => {
  assert.strictEqual(escapeHtml("it's `code`"), 'it&#39;s &#x60;code&#x60;');
});

test('double mustache escapes values', () => {
  assert.strictEqual(render('{{v}}', { v: '<b>' }), '&lt;b&gt;');
});

test('triple mustache and ampersand do not escape', () => {
  assert.strictEqual(render('{{{v}}}|{{& v}}', { v: '<b>&' }), '<b>&|<b>&');
});

test('engine with escape disabled leaves values alone', () => {
  const engine = new Engine({ escape: false });
  assert.strictEqual(engine.render('{{v}}', { v: '<i>' }), '<i>');
});

test('engine accepts a custom escape function', () => {
  const engine = new Engine({ escape: (s) => s.toUpperCase() });
  assert.strictEqual(engine.render('{{v}} {{{v}}}', { v: 'ab' }), 'AB ab');
});
