'use strict';

const { tokenize, DEFAULT_TAGS } = require('./lexer');
const { parse } = require('./parser');
const { Context } = require('./context');
const { Renderer } = require('./renderer');
const { escapeHtml, noEscape } = require('./escape');
const { TemplateError } = require('./errors');

const MAX_CACHE_ENTRIES = 500;

/**
 * An engine holds registered partials, options and a cache of parsed
 * templates. Most users can use the module-level `render`/`compile`, which
 * share one default engine.
 */
class Engine {
  constructor(options = {}) {
    this.tags = options.tags ? [...options.tags] : [...DEFAULT_TAGS];
    this.escape = options.escape === false ? noEscape : options.escape || escapeHtml;
    this.partials = Object.create(null);
    this.cache = new Map();
    this.renderer = new Renderer({
      parse: (template, tags) => this.parse(template, tags),
      escape: this.escape,
      partials: this.partials,
    });
  }

  parse(template, tags = this.tags) {
    const key = `${tags[0]} ${tags[1]}\u0000${template}`;
    let tree = this.cache.get(key);
    if (!tree) {
      tree = parse(template, tags);
      if (this.cache.size >= MAX_CACHE_ENTRIES) {
        this.cache.delete(this.cache.keys().next().value);
      }
      this.cache.set(key, tree);
    }
    return tree;
  }

  registerPartial(name, template) {
    if (typeof template !== 'string') {
      throw new TypeError(`Partial "${name}" must be a string`);
    }
    this.partials[name] = template;
    return this;
  }

  unregisterPartial(name) {
    delete this.partials[name];
    return this;
  }

  render(template, view = {}, partials = undefined) {
    const tree = this.parse(template);
    return this.renderer.render(tree, view, partials, template);
  }

  compile(template) {
    const tree = this.parse(template);
    const fn = (view = {}, partials = undefined) => this.renderer.render(tree, view, partials, template);
    fn.source = template;
    return fn;
  }

  clearCache() {
    this.cache.clear();
  }
}

const defaultEngine = new Engine();

function render(template, view, partials) {
  return defaultEngine.render(template, view, partials);
}

function compile(template) {
  return defaultEngine.compile(template);
}

module.exports = {
  Engine,
  Context,
  TemplateError,
  render,
  compile,
  parse,
  tokenize,
  escapeHtml,
  defaultEngine,
};
