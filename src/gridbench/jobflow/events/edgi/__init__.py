"""EDGI monitoring reports: hardened parsing, mapping to stages, and the id-chain join.

A report is ``<report timestamp=".." timezone="GMT" version="1.1">`` holding
``<metric_data>`` records with ``dt``, ``event`` (``job_entry`` | ``job_submission`` |
``job_status``), ``job_id`` and, by event, ``job_id_bridge`` and ``status``. Server ids
are tied to gridbench jobs through the id chain: the client's ``submit_ack``
``backend_id`` is the first tier's id; each tier's ``job_submission`` names the next
tier's id.

* :mod:`.report_xml` - report bytes -> records (defusedxml; pure)
* :mod:`.frames` - records -> tier events, timestamps and bad-record warnings (polars; pure)
* :mod:`.join` - the id chain tying tier events to gridbench jobs (polars; pure)
* :mod:`.collector` - :class:`~.collector.ReportCollector` and :func:`~.collector.ingest_edgi`:
  listing, fetching and polling the report sources (I/O)
* :mod:`.fetch` - finding and fetching report files: local directories or HTTP(S)
  listings of untrusted report servers (I/O)
"""
