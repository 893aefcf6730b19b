'use strict';

/**
 * Compute the 1-based line and column of `index` inside `source`.
 */
function positionOf(source, index) {
  let line = 1;
  let column = 1;
  const limit = Math.min(index, source.length);
  for (let i = 0; i < limit; i++) {
    if (source[i] === '\n') {
      line++;
      column = 1;
    } else {
      column++;
    }
  }
  return { line, column };
}

/**
 * Error raised for malformed templates. Carries the position of the offending
 * tag when it is known.
 */
class TemplateError extends Error {
  constructor(message, source, index) {
    let where = null;
    if (typeof source === 'string' && typeof index === 'number') {
      where = positionOf(source, index);
      message = `${message} (line ${where.line}, column ${where.column})`;
    }
    super(message);
    this.name = 'TemplateError';
    this.line = where ? where.line : undefined;
    this.column = where ? where.column : undefined;
    this.index = typeof index === 'number' ? index : undefined;
  }
}

module.exports = { TemplateError, positionOf };
