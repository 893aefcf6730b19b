// harnessadapt's grading guard for `node --test`: a reporter that runs in the test runner's own
// process (test files run in child processes), so it records each test's outcome from the runner's
// events, not from text a test printed. Names follow the TAP parser: "parent > child".
export default async function* haGuard(source) {
  const tests = {};
  const counts = {};
  const stack = [];
  const rank = { PASSED: 0, SKIPPED: 1, FAILED: 2 };
  for await (const event of source) {
    const d = event.data || {};
    if (event.type === 'test:start') {
      stack.length = d.nesting;
      stack[d.nesting] = d.name;
    } else if (event.type === 'test:pass' || event.type === 'test:fail') {
      const path = stack.slice(0, d.nesting).concat([d.name]).join(' > ');
      const status = event.type === 'test:fail' ? 'FAILED' : (d.skip || d.todo ? 'SKIPPED' : 'PASSED');
      if (!(path in tests) || rank[status] > rank[tests[path]]) tests[path] = status;
    } else if (event.type === 'test:diagnostic' && d.nesting === 0) {
      const m = /^(tests|pass|fail|cancelled|skipped|todo) (\d+)$/.exec(d.message || '');
      if (m) counts[m[1]] = Number(m[2]);
    }
  }
  yield JSON.stringify({ version: 1, tests, counts }) + '\n';
}
