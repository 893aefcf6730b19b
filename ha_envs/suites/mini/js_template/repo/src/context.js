'use strict';

function isObjectLike(value) {
  return value !== null && (typeof value === 'object' || typeof value === 'function');
}

/**
 * Does `obj` have a property called `name`? Own and inherited properties both
 * count (so class getters work), but primitives only expose own indexable
 * properties such as `length` of a string.
 */
function hasProperty(obj, name) {
  if (isObjectLike(obj)) return name in obj;
  if (typeof obj === 'string' || typeof obj === 'number' || typeof obj === 'boolean') {
    return Object.prototype.hasOwnProperty.call(Object(obj), name);
  }
  return false;
}

/**
 * Follow a list of property names starting at `view`. Returns undefined as
 * soon as one of them is missing.
 */
function resolvePath(view, names) {
  let value = view;
  for (const name of names) {
    if (!hasProperty(value, name)) return undefined;
    value = value[name];
  }
  return value;
}

/**
 * A context is one level of the rendering stack: the view at this level and
 * the context it was pushed on. Names that are not found at this level are
 * looked up in the parent levels, innermost first.
 */
class Context {
  constructor(view, parent = null) {
    this.view = view;
    this.parent = parent;
    this.cache = new Map();
  }

  push(view) {
    return new Context(view, this);
  }

  get depth() {
    let depth = 0;
    for (let ctx = this.parent; ctx; ctx = ctx.parent) depth++;
    return depth;
  }

  /**
   * Find the value of `name` ("." means the current view, "a.b.c" is a dotted
   * name). Returns undefined when no level of the stack has it. Functions are
   * returned as is; the renderer decides how to call them.
   */
  lookup(name) {
    if (this.cache.has(name)) return this.cache.get(name);

    let value;
    if (name === '.') {
      value = this.view;
    } else {
      const names = name.split('.');
      let context = this;
      while (context) {
        value = resolvePath(context.view, names);
        if (value) break;
        context = context.parent;
      }
    }

    this.cache.set(name, value);
    return value;
  }
}

module.exports = { Context, hasProperty, resolvePath };
