'use strict';

const { TemplateError } = require('./errors');
const { tokenize, DEFAULT_TAGS } = require('./lexer');

/**
 * Nest a flat token list into a tree.
 *
 * Node shapes:
 *   { type: 'text', value }
 *   { type: 'name' | '&', value }
 *   { type: '#' | '^', value, children, rawStart, rawEnd, tags }
 *   { type: '>', value, indent }
 *
 * Comments and delimiter changes do not produce nodes.
 */
function buildTree(tokens, template) {
  const root = { type: 'root', children: [] };
  const stack = [root];

  for (const token of tokens) {
    const parent = stack[stack.length - 1];
    switch (token.type) {
      case 'text':
        parent.children.push({ type: 'text', value: token.value });
        break;
      case 'name':
      case '&':
        parent.children.push({ type: token.type, value: token.value });
        break;
      case '>':
        parent.children.push({ type: '>', value: token.value, indent: token.indent || '' });
        break;
      case '#':
      case '^': {
        const section = {
          type: token.type,
          value: token.value,
          children: [],
          rawStart: token.end,
          rawEnd: token.end,
          tags: token.tags,
          start: token.start,
        };
        parent.children.push(section);
        stack.push(section);
        break;
      }
      case '/': {
        if (stack.length === 1) {
          throw new TemplateError(`Unopened section "${token.value}"`, template, token.start);
        }
        const open = stack.pop();
        if (open.value !== token.value) {
          throw new TemplateError(
            `Unclosed section "${open.value}", found closing tag "${token.value}"`,
            template,
            token.start
          );
        }
        open.rawEnd = token.start;
        break;
      }
      case '!':
      case '=':
        break;
      default:
        throw new TemplateError(`Unknown token type "${token.type}"`, template, token.start);
    }
  }

  if (stack.length > 1) {
    const open = stack[stack.length - 1];
    throw new TemplateError(`Unclosed section "${open.value}"`, template, open.start);
  }
  return root.children;
}

function parse(template, tags = DEFAULT_TAGS) {
  return buildTree(tokenize(template, tags), template);
}

module.exports = { parse, buildTree };
