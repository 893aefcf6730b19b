'use strict';

const test = require('node:test');
const assert = require('node:assert');
const { tokenize } = require('../src/index');

function types(tokens) {
  return tokens.map((t) => [t.type, t.value]);
}

test('lexer splits text and variables', () => {
  const tokens = tokenize('Hello {{ name }}!');
  assert.deepStrictEqual(types(tokens), [
    ['text', 'Hello '],
    ['name', 'name'],
    ['text', '!'],
  ]);
});

test('lexer recognises every sigil', () => {
  const tokens = tokenize('{{#a}}{{^b}}{{/b}}{{/a}}{{> p}}{{! note }}{{&c}}{{{d}}}');
  assert.deepStrictEqual(
    tokens.map((t) => t.type),
    ['#', '^', '/', '/', '>', '!', '&', '&']
  );
  assert.strictEqual(tokens[7].value, 'd');
});

test('lexer records offsets of tags', () => {
  const tokens = tokenize('ab{{x}}cd');
  assert.strictEqual(tokens[1].start, 2);
  assert.strictEqual(tokens[1].end, 7);
});

test('lexer changes delimiters', () => {
  const tokens = tokenize('{{=<% %>=}}<% name %> {{literal}}');
  const kinds = types(tokens);
  assert.deepStrictEqual(kinds, [
    ['=', '<% %>'],
    ['name', 'name'],
    ['text', ' {{literal}}'],
  ]);
});

test('lexer strips standalone section lines', () => {
  const tokens = tokenize('a\n  {{#s}}\nb\n  {{/s}}\nc');
  assert.deepStrictEqual(types(tokens), [
    ['text', 'a\n'],
    ['#', 's'],
    ['text', 'b\n'],
    ['/', 's'],
    ['text', 'c'],
  ]);
});

test('lexer keeps indentation of standalone partials', () => {
  const tokens = tokenize('x\n    {{> item}}\ny');
  const partial = tokens.find((t) => t.type === '>');
  assert.strictEqual(partial.indent, '    ');
});

test('lexer does not strip variables on their own line', () => {
  const tokens = tokenize('  {{name}}\n');
  assert.deepStrictEqual(types(tokens), [
    ['text', '  '],
    ['name', 'name'],
    ['text', '\n'],
  ]);
});

test('lexer rejects an unclosed tag with its position', () => {
  assert.throws(() => tokenize('line one\n  {{oops'), (err) => {
    assert.strictEqual(err.name, 'TemplateError');
    assert.strictEqual(err.line, 2);
    assert.strictEqual(err.column, 3);
    return true;
  });
});

test('lexer rejects empty tags and bad delimiters', () => {
  assert.throws(() => tokenize('{{ }}'), /Empty tag/);
  assert.throws(() => tokenize('{{=<%=}}'), /Invalid delimiters/);
});
