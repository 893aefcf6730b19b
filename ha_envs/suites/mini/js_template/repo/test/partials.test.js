'use strict';

const test = require('node:test');
const assert = require('node:assert');
const { render, Engine } = require('../src/index');

test('partials render with the current context', () => {
  const out = render('{{#user}}{{> card}}{{/user}}', { user: { name: 'Kim' } }, { card: '[{{name}}]' });
  assert.strictEqual(out, '[Kim]');
});

test('missing partials render nothing', () => {
  assert.strictEqual(render('a{{> nope}}b', {}, {}), 'ab');
});

test('partials can be looked up through a function', () => {
  const out = render('{{> greet}}', { who: 'you' }, (name) => (name === 'greet' ? 'hi {{who}}' : undefined));
  assert.strictEqual(out, 'hi you');
});

test('standalone partials are indented', () => {
  const out = render('<ul>\n  {{> li}}\n</ul>\n', { x: 1 }, { li: '<li>{{x}}</li>\n<li>2</li>\n' });
  assert.strictEqual(out, '<ul>\n  <li>1</li>\n  <li>2</li>\n</ul>\n');
});

test('recursive partials render trees', () => {
  const view = { name: 'root', kids: [{ name: 'a', kids: [{ name: 'a1', kids: [] }] }, { name: 'b', kids: [] }] };
  const partials = { node: '{{name}}({{#kids}}{{> node}}{{/kids}})' };
  assert.strictEqual(render('{{> node}}', view, partials), 'root(a(a1())b())');
});

test('runaway partial recursion is reported', () => {
  assert.throws(() => render('{{> loop}}', {}, { loop: 'x{{> loop}}' }), /nested more than/);
});

test('registered partials are found by the engine', () => {
  const engine = new Engine();
  engine.registerPartial('footer', '-- {{sig}}');
  assert.strictEqual(engine.render('body\n{{> footer}}', { sig: 'me' }), 'body\n-- me');
  engine.unregisterPartial('footer');
  assert.strictEqual(engine.render('body\n{{> footer}}', { sig: 'me' }), 'body\n');
});

test('partials passed to render win over registered ones', () => {
  const engine = new Engine();
  engine.registerPartial('p', 'registered');
  assert.strictEqual(engine.render('{{>p}}', {}, { p: 'given' }), 'given');
});
