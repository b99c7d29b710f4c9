"""Several hosts (docs/hosts.md): the one inventory every family names its hosts from
(:mod:`gridbench.hosts.inventory`), ``gridbench hosts check`` (:mod:`gridbench.hosts.check`)
and a lab of hosts on this machine (:mod:`gridbench.hosts.lab`). Core: imports no family."""
