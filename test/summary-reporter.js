// Prints one plain closing line ("tests: N passed, N failed, N skipped") after jest's own
// summary, in the form CI tooling reads regardless of the test runner.
class SummaryReporter {
  onRunComplete(_contexts, results) {
    const skipped = results.numPendingTests + results.numTodoTests;
    process.stdout.write(
      `tests: ${results.numPassedTests} passed, ${results.numFailedTests} failed, ${skipped} skipped\n`,
    );
  }
}
module.exports = SummaryReporter;
