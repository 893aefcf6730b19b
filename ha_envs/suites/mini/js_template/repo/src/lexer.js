'use strict';

const { TemplateError } = require('./errors');

const DEFAULT_TAGS = Object.freeze(['{{', '}}']);

// Tag types that may stand alone on a line; such lines are removed from the
// output entirely (the whitespace around the tag and the line break).
const STANDALONE_TYPES = new Set(['#', '^', '/', '>', '!', '=']);

// Sigils that follow the opening delimiter.
const SIGILS = new Set(['#', '^', '/', '>', '!', '=', '&', '{']);

const NAME_RE = /^[^\s]+$/;

function isBlank(text) {
  return /^[ \t]*$/.test(text);
}

function parseDelimiters(spec, template, index) {
  const parts = spec.trim().split(/\s+/);
  if (parts.length !== 2 || !parts[0] || !parts[1]) {
    throw new TemplateError(`Invalid delimiters "${spec}"`, template, index);
  }
  if (parts[0].includes('=') || parts[1].includes('=')) {
    throw new TemplateError('Delimiters may not contain "="', template, index);
  }
  return parts;
}

/**
 * Split the template into raw tokens. Text tokens are split after every
 * line break so that each token belongs to exactly one line.
 */
function scan(template, tags) {
  let [open, close] = tags;
  const tokens = [];
  let pos = 0;

  function pushText(start, end) {
    let from = start;
    while (from < end) {
      const nl = template.indexOf('\n', from);
      const stop = nl === -1 || nl >= end ? end : nl + 1;
      tokens.push({ type: 'text', value: template.slice(from, stop), start: from, end: stop });
      from = stop;
    }
  }

  while (pos < template.length) {
    const openAt = template.indexOf(open, pos);
    if (openAt === -1) {
      pushText(pos, template.length);
      break;
    }
    pushText(pos, openAt);

    let cursor = openAt + open.length;
    let type = 'name';
    let closing = close;
    const sigil = template[cursor];
    if (SIGILS.has(sigil)) {
      cursor++;
      if (sigil === '{') {
        type = '&';
        closing = '}' + close;
      } else if (sigil === '=') {
        type = '=';
        closing = '=' + close;
      } else {
        type = sigil;
      }
    }

    const closeAt = template.indexOf(closing, cursor);
    if (closeAt === -1) {
      throw new TemplateError(`Unclosed tag "${open}"`, template, openAt);
    }
    const raw = template.slice(cursor, closeAt);
    const end = closeAt + closing.length;
    const token = { type, value: raw.trim(), start: openAt, end, tags: [open, close] };

    if (type === '=') {
      [open, close] = parseDelimiters(raw, template, openAt);
      token.value = `${open} ${close}`;
    } else if (type !== '!') {
      if (!token.value) {
        throw new TemplateError('Empty tag', template, openAt);
      }
      if (!NAME_RE.test(token.value)) {
        throw new TemplateError(`Invalid tag name "${token.value}"`, template, openAt);
      }
    }
    tokens.push(token);
    pos = end;
  }
  return tokens;
}

/**
 * Remove the surrounding whitespace and the line break of tags that stand
 * alone on their line. Standalone partials remember their indentation so the
 * renderer can indent every line of the partial.
 */
function stripStandalone(tokens) {
  const out = [];
  let line = [];

  function flush() {
    const tags = line.filter((t) => t.type !== 'text');
    const texts = line.filter((t) => t.type === 'text');
    const standalone =
      tags.length === 1 &&
      STANDALONE_TYPES.has(tags[0].type) &&
      texts.every((t) => isBlank(t.value.replace(/\r?\n$/, '')));
    if (standalone) {
      const tag = tags[0];
      if (tag.type === '>') {
        const before = line.slice(0, line.indexOf(tag)).map((t) => t.value).join('');
        tag.indent = before;
      }
      out.push(tag);
    } else {
      out.push(...line);
    }
    line = [];
  }

  for (const token of tokens) {
    line.push(token);
    if (token.type === 'text' && token.value.endsWith('\n')) {
      flush();
    }
  }
  if (line.length) flush();
  return out;
}

function mergeText(tokens) {
  const out = [];
  for (const token of tokens) {
    const last = out[out.length - 1];
    if (token.type === 'text' && last && last.type === 'text' && last.end === token.start) {
      last.value += token.value;
      last.end = token.end;
    } else {
      out.push({ ...token });
    }
  }
  return out;
}

/**
 * Turn a template string into a flat list of tokens.
 *
 * Every token has `type`, `value`, `start` and `end` (offsets in the template).
 * Types: 'text', 'name' (escaped variable), '&' (unescaped variable),
 * '#', '^', '/' (sections), '>' (partial), '!' (comment), '=' (delimiters).
 */
function tokenize(template, tags = DEFAULT_TAGS) {
  if (typeof template !== 'string') {
    throw new TypeError(`Template must be a string, got ${typeof template}`);
  }
  if (!Array.isArray(tags) || tags.length !== 2) {
    throw new TypeError('tags must be an array of two strings');
  }
  return mergeText(stripStandalone(scan(template, tags)));
}

module.exports = { tokenize, DEFAULT_TAGS };
