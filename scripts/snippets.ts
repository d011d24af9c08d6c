/**
 * Type-checks every ```ts block of README.md and docs/*.md the way a user's project would compile
 * it after copying it: as an ES module of its own, importing the built `rlock` and `ioredis`, under
 * `module: nodenext` and `strict`. A block shows what the user supplies with visible `declare`
 * lines; a block that is not meant to compile takes another fence language (sh, text, ...).
 *
 * `npm run check:snippets` prints each failure as file:line:column; a Jest test runs the same check.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import ts from 'typescript';
import { createUserProject } from './user-project';

const root = resolve(__dirname, '..');

export interface Snippet {
  /** The Markdown file, relative to the repository root. */
  readonly file: string;
  /** Line of the block's first code line in that file (1-based). */
  readonly line: number;
  /** The nearest heading above the block. */
  readonly heading: string;
  readonly code: string;
}

const TYPESCRIPT_FENCES = new Set(['ts', 'typescript']);

/** The TypeScript blocks of one Markdown text. */
export function extractSnippets(file: string, markdown: string): Snippet[] {
  const snippets: Snippet[] = [];
  const lines = markdown.split('\n');
  let heading = '';
  for (let i = 0; i < lines.length; i += 1) {
    const opening = /^(\s*)(`{3,}|~{3,})\s*([\w+-]*)/.exec(lines[i] ?? '');
    if (!opening) {
      heading = /^#{1,6}\s+(.*)$/.exec(lines[i] ?? '')?.[1] ?? heading;
      continue;
    }
    const [, indent = '', fence = '', language = ''] = opening;
    const start = i + 1;
    do i += 1;
    while (i < lines.length && !(lines[i] ?? '').trimStart().startsWith(fence));
    if (TYPESCRIPT_FENCES.has(language.toLowerCase())) {
      const code = lines
        .slice(start, i)
        .map((line) => (line.startsWith(indent) ? line.slice(indent.length) : line));
      snippets.push({ file, line: start + 1, heading, code: `${code.join('\n')}\n` });
    }
  }
  return snippets;
}

/** The blocks of README.md and every docs/*.md, in file order. */
export function documentedSnippets(): Snippet[] {
  const docs = readdirSync(join(root, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => `docs/${name}`);
  return ['README.md', ...docs].flatMap((file) =>
    extractSnippets(file, readFileSync(join(root, file), 'utf8')),
  );
}

/** What a user's tsconfig would say for a Node 20 ES module project. */
const USER_OPTIONS: ts.CompilerOptions = {
  module: ts.ModuleKind.NodeNext,
  moduleResolution: ts.ModuleResolutionKind.NodeNext,
  target: ts.ScriptTarget.ES2022,
  lib: ['lib.es2023.d.ts'],
  types: ['node'],
  strict: true,
  skipLibCheck: true,
  noEmit: true,
};

/**
 * Compiles each snippet as a module of a fresh app that depends on the built package (run
 * `npm run build` first). Returns one line per error, `file:line:column TS<code>: message`.
 */
export function checkSnippets(snippets: readonly Snippet[] = documentedSnippets()): string[] {
  const project = createUserProject();
  try {
    const files = snippets.map((snippet, index) => {
      const path = join(project.dir, `snippet-${index}.ts`);
      writeFileSync(path, snippet.code);
      return path;
    });
    const program = ts.createProgram(files, USER_OPTIONS);
    const located = ts.getPreEmitDiagnostics(program).map((diagnostic) => {
      const message = `TS${diagnostic.code}: ${ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n')}`;
      const index = diagnostic.file ? files.indexOf(diagnostic.file.fileName) : -1;
      const snippet = snippets[index];
      if (!diagnostic.file || !snippet) return { index, start: 0, text: message };
      const start = diagnostic.start ?? 0;
      const { line, character } = diagnostic.file.getLineAndCharacterOfPosition(start);
      return { index, start, text: `${snippet.file}:${snippet.line + line}:${character + 1} ${message}` };
    });
    return located.sort((a, b) => a.index - b.index || a.start - b.start).map(({ text }) => text);
  } finally {
    project.remove();
  }
}

if (require.main === module) {
  const snippets = documentedSnippets();
  const errors = checkSnippets(snippets);
  for (const error of errors) console.error(error);
  console.log(`${snippets.length} TypeScript blocks checked, ${errors.length} errors`);
  process.exitCode = errors.length > 0 ? 1 : 0;
}
