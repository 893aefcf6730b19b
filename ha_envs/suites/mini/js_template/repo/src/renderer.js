'use strict';

const { Context } = require('./context');
const { TemplateError } = require('./errors');
const { escapeHtml } = require('./escape');

const MAX_PARTIAL_DEPTH = 64;

function isFalsy(value) {
  return value === undefined || value === null || value === false || value === 0 || value === '' ||
    Number.isNaN(value) || (Array.isArray(value) && value.length === 0);
}

/** Indent every non-empty line of `text` with `indent`. */
function indentLines(text, indent) {
  if (!indent) return text;
  return text.replace(/^(?=.)/gm, indent);
}

function toText(value) {
  if (value === undefined || value === null) return '';
  return String(value);
}

/**
 * Renders parsed trees. One renderer is shared by an Engine; it parses
 * partials and lambda results through `parse(template, tags)` which the
 * engine provides (so they share its cache).
 */
class Renderer {
  constructor({ parse, escape = escapeHtml, partials = {} } = {}) {
    if (typeof parse !== 'function') throw new TypeError('Renderer needs a parse function');
    this.parse = parse;
    this.escape = escape;
    this.partials = partials;
  }

  render(tree, view, partials, template) {
    const context = view instanceof Context ? view : new Context(view);
    const state = { partials: partials || {}, depth: 0 };
    return this.renderNodes(tree, context, state, template);
  }

  renderNodes(nodes, context, state, template) {
    let out = '';
    for (const node of nodes) {
      switch (node.type) {
        case 'text':
          out += node.value;
          break;
        case 'name':
          out += this.renderVariable(node, context, true);
          break;
        case '&':
          out += this.renderVariable(node, context, false);
          break;
        case '#':
          out += this.renderSection(node, context, state, template);
          break;
        case '^':
          out += this.renderInverted(node, context, state, template);
          break;
        case '>':
          out += this.renderPartial(node, context, state);
          break;
        default:
          throw new TemplateError(`Cannot render node of type "${node.type}"`);
      }
    }
    return out;
  }

  renderVariable(node, context, escaped) {
    let value = context.lookup(node.value);
    if (typeof value === 'function') {
      value = value.call(context.view);
    }
    const text = toText(value);
    return escaped ? this.escape(text) : text;
  }

  renderSection(node, context, state, template) {
    const value = context.lookup(node.value);

    if (Array.isArray(value)) {
      let out = '';
      for (const item of value) {
        out += this.renderNodes(node.children, context.push(item), state, template);
      }
      return out;
    }

    if (typeof value === 'function') {
      if (typeof template !== 'string') {
        throw new TemplateError(`Lambda "${node.value}" needs the original template`);
      }
      const raw = template.slice(node.rawStart, node.rawEnd);
      const renderText = (text) => {
        const tree = this.parse(text, node.tags);
        return this.renderNodes(tree, context, state, text);
      };
      const result = value.call(context.view, raw, renderText);
      return toText(result);
    }

    if (isFalsy(value)) return '';

    if (typeof value === 'object' || typeof value === 'string' || typeof value === 'number') {
      return this.renderNodes(node.children, context.push(value), state, template);
    }
    return this.renderNodes(node.children, context, state, template);
  }

  renderInverted(node, context, state, template) {
    const value = context.lookup(node.value);
    if (isFalsy(value)) {
      return this.renderNodes(node.children, context, state, template);
    }
    return '';
  }

  findPartial(name, state) {
    const sources = [state.partials, this.partials];
    for (const source of sources) {
      if (typeof source === 'function') {
        const found = source(name);
        if (typeof found === 'string') return found;
      } else if (source && Object.prototype.hasOwnProperty.call(source, name)) {
        return source[name];
      }
    }
    return undefined;
  }

  renderPartial(node, context, state) {
    const source = this.findPartial(node.value, state);
    if (source === undefined || source === null) return '';
    if (state.depth >= MAX_PARTIAL_DEPTH) {
      throw new TemplateError(`Partial "${node.value}" nested more than ${MAX_PARTIAL_DEPTH} levels deep`);
    }
    const text = indentLines(String(source), node.indent);
    const tree = this.parse(text);
    const inner = { partials: state.partials, depth: state.depth + 1 };
    return this.renderNodes(tree, context, inner, text);
  }
}

module.exports = { Renderer, isFalsy, indentLines };
