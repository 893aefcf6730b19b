'use strict';

const test = require('node:test');
const assert = require('node:assert');
const { parse, TemplateError } = require('../src/index');

test('parser nests sections', () => {
  const tree = parse('{{#a}}x{{#b}}y{{/b}}{{/a}}');
  assert.strictEqual(tree.length, 1);
  assert.strictEqual(tree[0].type, '#');
  assert.strictEqual(tree[0].children[1].type, '#');
  assert.strictEqual(tree[0].children[1].children[0].value, 'y');
});

test('parser records the raw text of a section', () => {
  const template = 'A{{#wrap}}inner {{x}}{{/wrap}}B';
  const tree = parse(template);
  const section = tree[1];
  assert.strictEqual(template.slice(section.rawStart, section.rawEnd), 'inner {{x}}');
});

test('parser drops comments and delimiter changes', () => {
  const tree = parse('a{{! hidden }}b{{=[ ]=}}[c]');
  assert.deepStrictEqual(
    tree.map((n) => n.type),
    ['text', 'text', 'name']
  );
});

test('parser reports mismatched closing tags', () => {
  assert.throws(() => parse('{{#a}}{{/b}}'), TemplateError);
  assert.throws(() => parse('{{/a}}'), /Unopened section/);
});

test('parser reports unclosed sections', () => {
  assert.throws(() => parse('{{#a}}\n{{#b}}{{/b}}'), (err) => {
    assert.match(err.message, /Unclosed section "a"/);
    assert.strictEqual(err.line, 1);
    return true;
  });
});
