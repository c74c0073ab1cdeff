"""The worker's ACP side: the client that drives an agent and serves its terminal/fs requests in
the trial's sandbox, and the manifest agents BenchFlow's contract describes."""
