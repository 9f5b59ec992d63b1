package cli

var rejectCommand = &command{
	name:    "reject",
	summary: "show a waiting approval, then refuse it, which cancels the run",
	usage:   "<run> [-approval ID | -yes] [-hash HASH] [-key FILE | -by WHO] [-note TEXT]",
	run:     func(e *env, g *global, c *command, args []string) int { return runDecide(e, g, c, args, false) },
}
