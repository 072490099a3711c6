"""Root conftest: load the harness's and the suites' pytest plugins (the suite table,
:mod:`harness.suites`): options --driver, --corpus, --mode, ..."""
from harness.suites import conftest_plugins

pytest_plugins = conftest_plugins()
