"""The features, logic only: the map, jobs and adaptive rounds, recovery, series, the suite, the
folder watcher, the queue and tokens. SQL lives in forgetmap.db; the web and CLI call these."""
