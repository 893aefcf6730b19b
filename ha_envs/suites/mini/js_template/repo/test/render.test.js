'use strict';

const test = require('node:test');
const assert = require('node:assert');
const { render, compile } = require('../src/index');

test('renders plain variables', () => {
  assert.strictEqual(render('Hello {{name}}!', { name: 'World' }), 'Hello World!');
});

test('missing variables render as empty strings', () => {
  assert.strictEqual(render('[{{nope}}]', {}), '[]');
});

test('numbers render as text', () => {
  assert.strictEqual(render('{{a}}+{{b}}', { a: 1.5, b: 0 }), '1.5+0');
});

test('dotted names resolve nested objects', () => {
  const view = { user: { address: { city: 'Oslo' } } };
  assert.strictEqual(render('{{user.address.city}}', view), 'Oslo');
  assert.strictEqual(render('[{{user.phone.number}}]', view), '[]');
});

test('sections iterate over lists', () => {
  const view = { items: [{ name: 'a' }, { name: 'b' }, { name: 'c' }] };
  assert.strictEqual(render('{{#items}}<{{name}}>{{/items}}', view), '<a><b><c>');
});

test('implicit iterator renders list of strings', () => {
  assert.strictEqual(render('{{#xs}}{{.}},{{/xs}}', { xs: ['x', 'y'] }), 'x,y,');
});

test('sections are skipped for falsy values and empty lists', () => {
  const tpl = '{{#a}}A{{/a}}{{#b}}B{{/b}}{{#c}}C{{/c}}{{#d}}D{{/d}}';
  assert.strictEqual(render(tpl, { a: false, b: [], c: null, d: 0 }), '');
});

test('object section pushes its value on the stack', () => {
  const view = { person: { name: 'Ann' }, greeting: 'Hi' };
  assert.strictEqual(render('{{#person}}{{greeting}} {{name}}{{/person}}', view), 'Hi Ann');
});

test('nested sections see outer names', () => {
  const view = {
    title: 'T',
    groups: [
      { label: 'g1', rows: [{ v: 1 }, { v: 2 }] },
      { label: 'g2', rows: [{ v: 3 }] },
    ],
  };
  const tpl = '{{#groups}}{{label}}:{{#rows}}{{title}}{{v}}{{/rows}};{{/groups}}';
  assert.strictEqual(render(tpl, view), 'g1:T1T2;g2:T3;');
});

test('inner names shadow outer names', () => {
  const view = { name: 'outer', child: { name: 'inner' } };
  assert.strictEqual(render('{{name}}/{{#child}}{{name}}{{/child}}/{{name}}', view), 'outer/inner/outer');
});

test('inverted sections render for falsy values', () => {
  const tpl = '{{^items}}none{{/items}}{{^ok}}!{{/ok}}';
  assert.strictEqual(render(tpl, { items: [], ok: true }), 'none');
});

test('standalone tags do not leave blank lines', () => {
  const tpl = 'list:\n{{#items}}\n- {{.}}\n{{/items}}\nend\n';
  assert.strictEqual(render(tpl, { items: ['a', 'b'] }), 'list:\n- a\n- b\nend\n');
});

test('comments are removed', () => {
  assert.strictEqual(render('a{{! c }}b\n  {{! whole line }}\nc', {}), 'ab\nc');
});

test('section lambdas receive the raw text', () => {
  const view = {
    name: 'Bo',
    bold: (text, renderText) => `<b>${renderText(text)}</b>`,
    raw: (text) => text.length,
  };
  assert.strictEqual(render('{{#bold}}Hi {{name}}{{/bold}}', view), '<b>Hi Bo</b>');
  assert.strictEqual(render('{{#raw}}{{name}}{{/raw}}', view), '8');
});

test('variable lambdas are called with the view as this', () => {
  const view = { first: 'Ada', last: 'L', full() { return `${this.first} ${this.last}`; } };
  assert.strictEqual(render('{{full}}', view), 'Ada L');
});

test('compile returns a reusable function', () => {
  const fn = compile('<{{x}}>');
  assert.strictEqual(fn({ x: 1 }), '<1>');
  assert.strictEqual(fn({ x: 2 }), '<2>');
  assert.strictEqual(fn.source, '<{{x}}>');
});

test('custom delimiters apply for the rest of the template', () => {
  assert.strictEqual(render('{{a}}{{=| |=}}|b|{{c}}', { a: 1, b: 2 }), '12{{c}}');
});
