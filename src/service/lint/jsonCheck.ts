/**
 * A strict JSON validator (RFC 8259) that says where the first problem is. JSON.parse does not
 * report a position for every error, and its messages change between V8 versions, so lint scans the
 * text itself. "JSON with comments" files (tsconfig.json and friends) allow comments and trailing
 * commas, as TypeScript and VS Code do.
 */
export interface JsonProblem {
  /** Offset (UTF-16 code units) of the character the problem is at. */
  offset: number;
  message: string;
}

export interface JsonDialect {
  comments: boolean;
  trailingCommas: boolean;
}

export const STRICT_JSON: JsonDialect = { comments: false, trailingCommas: false };
export const JSON_WITH_COMMENTS: JsonDialect = { comments: true, trailingCommas: true };

/** Deeper nesting than this is refused rather than risking the stack. */
export const JSON_DEPTH_MAX = 1000;

const BYTE_ORDER_MARK = 0xfeff;

class Problem extends Error {
  constructor(
    readonly offset: number,
    message: string,
  ) {
    super(message);
  }
}

/** The first problem in `text`, or null when it is one valid JSON value. */
export function jsonProblem(text: string, dialect: JsonDialect = STRICT_JSON): JsonProblem | null {
  try {
    new JsonScanner(text, dialect).document();
    return null;
  } catch (error) {
    if (error instanceof Problem) return { offset: error.offset, message: error.message };
    throw error;
  }
}

class JsonScanner {
  private at = 0;

  constructor(
    private readonly text: string,
    private readonly dialect: JsonDialect,
  ) {}

  document(): void {
    if (this.text.charCodeAt(0) === BYTE_ORDER_MARK) this.at = 1;
    this.space();
    if (this.at >= this.text.length) throw new Problem(this.at, 'The file is empty; expected a JSON value');
    this.value(0);
    this.space();
    if (this.at < this.text.length) throw new Problem(this.at, `Unexpected ${this.describe()} after the end of the JSON value`);
  }

  private value(depth: number): void {
    if (depth > JSON_DEPTH_MAX) throw new Problem(this.at, `Nesting is deeper than ${JSON_DEPTH_MAX} levels`);
    const char = this.text[this.at];
    if (char === '{') return this.object(depth);
    if (char === '[') return this.array(depth);
    if (char === '"') return this.string();
    if (char === '-' || (char >= '0' && char <= '9')) return this.number();
    for (const literal of ['true', 'false', 'null']) {
      if (this.text.startsWith(literal, this.at)) {
        this.at += literal.length;
        return;
      }
    }
    if (char === "'") throw new Problem(this.at, 'Strings must use double quotes');
    throw new Problem(this.at, `Unexpected ${this.describe()}; expected a JSON value`);
  }

  private object(depth: number): void {
    this.at++;
    this.space();
    if (this.text[this.at] === '}') {
      this.at++;
      return;
    }
    for (;;) {
      if (this.text[this.at] !== '"') throw new Problem(this.at, `Expected a property name in double quotes but found ${this.describe()}`);
      this.string();
      this.space();
      if (this.text[this.at] !== ':') throw new Problem(this.at, `Expected ":" after the property name but found ${this.describe()}`);
      this.at++;
      this.space();
      this.value(depth + 1);
      this.space();
      const next = this.text[this.at];
      if (next === '}') {
        this.at++;
        return;
      }
      if (next !== ',') throw new Problem(this.at, `Expected "," or "}" after a property value but found ${this.describe()}`);
      const comma = this.at++;
      this.space();
      if (this.text[this.at] === '}') {
        if (!this.dialect.trailingCommas) throw new Problem(comma, 'Trailing commas are not allowed in JSON');
        this.at++;
        return;
      }
    }
  }

  private array(depth: number): void {
    this.at++;
    this.space();
    if (this.text[this.at] === ']') {
      this.at++;
      return;
    }
    for (;;) {
      this.value(depth + 1);
      this.space();
      const next = this.text[this.at];
      if (next === ']') {
        this.at++;
        return;
      }
      if (next !== ',') throw new Problem(this.at, `Expected "," or "]" after an array element but found ${this.describe()}`);
      const comma = this.at++;
      this.space();
      if (this.text[this.at] === ']') {
        if (!this.dialect.trailingCommas) throw new Problem(comma, 'Trailing commas are not allowed in JSON');
        this.at++;
        return;
      }
    }
  }

  private string(): void {
    const start = this.at++;
    for (;;) {
      if (this.at >= this.text.length) throw new Problem(start, 'Unterminated string');
      const code = this.text.charCodeAt(this.at);
      if (code === 0x22) {
        this.at++;
        return;
      }
      if (code < 0x20) throw new Problem(this.at, code === 0x0a ? 'Unterminated string (a line break must be written \\n)' : 'Control characters must be escaped in a string');
      if (code === 0x5c) {
        const escape = this.text[this.at + 1];
        if (escape === 'u') {
          if (!/^[0-9a-fA-F]{4}$/.test(this.text.slice(this.at + 2, this.at + 6))) throw new Problem(this.at, 'Invalid \\u escape; expected four hex digits');
          this.at += 6;
        } else if (escape !== undefined && '"\\/bfnrt'.includes(escape)) {
          this.at += 2;
        } else {
          throw new Problem(this.at, `Invalid escape ${JSON.stringify(`\\${escape ?? ''}`)} in a string`);
        }
        continue;
      }
      this.at++;
    }
  }

  private number(): void {
    const match = /^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/.exec(this.text.slice(this.at, this.at + 400));
    if (!match) throw new Problem(this.at, 'Invalid number');
    const end = this.at + match[0].length;
    const after = this.text[end];
    if (after !== undefined && /[0-9A-Za-z.+-]/.test(after)) throw new Problem(this.at, 'Invalid number');
    this.at = end;
  }

  private space(): void {
    for (;;) {
      const char = this.text[this.at];
      if (char === ' ' || char === '\t' || char === '\n' || char === '\r') {
        this.at++;
      } else if (char === '/' && (this.text[this.at + 1] === '/' || this.text[this.at + 1] === '*')) {
        if (!this.dialect.comments) throw new Problem(this.at, 'Comments are not allowed in JSON');
        if (this.text[this.at + 1] === '/') {
          const end = this.text.indexOf('\n', this.at);
          this.at = end === -1 ? this.text.length : end + 1;
        } else {
          const end = this.text.indexOf('*/', this.at + 2);
          if (end === -1) throw new Problem(this.at, 'Unterminated comment');
          this.at = end + 2;
        }
      } else {
        return;
      }
    }
  }

  private describe(): string {
    if (this.at >= this.text.length) return 'the end of the file';
    const codePoint = this.text.codePointAt(this.at)!;
    return codePoint < 0x20 ? `character U+${codePoint.toString(16).padStart(4, '0').toUpperCase()}` : JSON.stringify(String.fromCodePoint(codePoint));
  }
}
