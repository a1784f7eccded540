import OutboxCommandLine

// The executable: everything it does is in OutboxCommandLine (`PushOutbox.main`), so the command
// line, its help and its exit codes can be tested in process.
PushOutbox.main(arguments: Array(CommandLine.arguments.dropFirst()))
