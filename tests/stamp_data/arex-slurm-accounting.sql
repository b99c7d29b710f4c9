PRAGMA foreign_keys=OFF;
BEGIN TRANSACTION;
CREATE TABLE AAR (
  RecordID          INTEGER PRIMARY KEY AUTOINCREMENT,
  /* Unique job ids */
  JobID             TEXT NOT NULL UNIQUE,
  LocalJobID        TEXT,
  /* Submission data */
  EndpointID        INTEGER NOT NULL,
  QueueID           INTEGER NOT NULL,
  UserID            INTEGER NOT NULL,
  VOID              INTEGER NOT NULL,
  /* Completion data */
  StatusID          INTEGER NOT NULL,
  ExitCode          INTEGER NOT NULL,
  /* Main accounting times to search jobs (as unix timestamp) */
  SubmitTime        INTEGER NOT NULL,
  EndTime           INTEGER NOT NULL,
  /* Used resources */
  NodeCount         INTEGER NOT NULL,
  CPUCount          INTEGER NOT NULL,
  UsedMemory        INTEGER NOT NULL,
  UsedVirtMem       INTEGER NOT NULL,
  UsedWalltime      INTEGER NOT NULL,
  UsedCPUUserTime   INTEGER NOT NULL,
  UsedCPUKernelTime INTEGER NOT NULL,
  UsedScratch       INTEGER NOT NULL,
  StageInVolume     INTEGER NOT NULL,
  StageOutVolume    INTEGER NOT NULL,
  /* Foreign keys constraints */
  FOREIGN KEY(EndpointID) REFERENCES Endpoints(ID),
  FOREIGN KEY(QueueID) REFERENCES Queues(ID),
  FOREIGN KEY(UserID) REFERENCES Users(ID),
  FOREIGN KEY(VOID) REFERENCES WLCGVOs(ID),
  FOREIGN KEY(StatusID) REFERENCES Status(ID)
);
INSERT INTO AAR VALUES(1,'d0EODmsY2qAoOSAtDmABFKDmABFKDmABFKDmw0MKDmABFKDm4PT3gm','1',1,1,1,1,2,0,1795752978,1795752990,1,1,1460,1460,3,0,0,4114,0,0);
CREATE TABLE Endpoints (
  ID            INTEGER PRIMARY KEY AUTOINCREMENT,
  Interface     TEXT NOT NULL,
  URL           TEXT NOT NULL
);
INSERT INTO Endpoints VALUES(1,'org.nordugrid.arcrest','https://localhost:54689/arex');
CREATE TABLE Queues (
  ID            INTEGER PRIMARY KEY AUTOINCREMENT,
  Name          TEXT NOT NULL UNIQUE
);
INSERT INTO Queues VALUES(1,'debug');
CREATE TABLE Users (
  ID            INTEGER PRIMARY KEY AUTOINCREMENT,
  Name          TEXT NOT NULL UNIQUE
);
INSERT INTO Users VALUES(1,'/DC=org/DC=nordugrid/DC=ARC/O=TestCA/CN=gridbench tester');
CREATE TABLE WLCGVOs (
  ID            INTEGER PRIMARY KEY AUTOINCREMENT,
  Name          TEXT NOT NULL UNIQUE
);
INSERT INTO WLCGVOs VALUES(1,'');
CREATE TABLE Status (
  ID            INTEGER PRIMARY KEY AUTOINCREMENT,
  Name          TEXT NOT NULL UNIQUE
);
INSERT INTO Status VALUES(1,'in-progress');
INSERT INTO Status VALUES(2,'completed');
CREATE TABLE AuthTokenAttributes (
  RecordID      INTEGER NOT NULL,
  AttrKey       TEXT NOT NULL,
  AttrValue     TEXT,
  FOREIGN KEY(RecordID) REFERENCES AAR(RecordID)
);
CREATE TABLE JobEvents (
  RecordID      INTEGER NOT NULL,
  EventKey      TEXT NOT NULL, -- including: submit, stageinstart, stageinstop, lrmssubmit, lrmsstart, lrmsend, stageoutstart, stageoutend, finish
  EventTime     TEXT NOT NULL,
  FOREIGN KEY(RecordID) REFERENCES AAR(RecordID)
);
INSERT INTO JobEvents VALUES(1,'ACCEPTED','2026-11-27 04:16:18');
INSERT INTO JobEvents VALUES(1,'PREPARING','2026-11-27 04:16:19');
INSERT INTO JobEvents VALUES(1,'SUBMIT','2026-11-27 04:16:19');
INSERT INTO JobEvents VALUES(1,'INLRMS','2026-11-27 04:16:21');
INSERT INTO JobEvents VALUES(1,'FINISHING','2026-11-27 04:16:30');
INSERT INTO JobEvents VALUES(1,'FINISHED','2026-11-27 04:16:30');
INSERT INTO JobEvents VALUES(1,'LRMSSTART','2026-11-27 04:16:21');
INSERT INTO JobEvents VALUES(1,'LRMSEND','2026-11-27 04:16:24');
CREATE TABLE RunTimeEnvironments (
  RecordID      INTEGER NOT NULL,
  RTEName       TEXT NOT NULL, -- TODO: should we record arguments, versions, default/enabled?
  FOREIGN KEY(RecordID) REFERENCES AAR(RecordID)
);
CREATE TABLE DataTransfers (
  RecordID      INTEGER NOT NULL,
  URL           TEXT NOT NULL,
  FileSize      INTEGER NOT NULL,
  TransferStart INTEGER NOT NULL,
  TransferEnd   INTEGER NOT NULL,
  TransferType  INTEGER NOT NULL, -- download, download from cahce, upload
  FOREIGN KEY(RecordID) REFERENCES AAR(RecordID)
);
CREATE TABLE JobExtraInfo (
  RecordID      INTEGER NOT NULL,
  InfoKey       TEXT NOT NULL, -- including: jobname, lrms, nodename, clienthost, localuser, projectname, systemsoftware, wninstance, benchmark
  InfoValue     TEXT,
  FOREIGN KEY(RecordID) REFERENCES AAR(RecordID)
);
INSERT INTO JobExtraInfo VALUES(1,'benchmark','HEPSPEC:1.0');
INSERT INTO JobExtraInfo VALUES(1,'clienthost','127.0.0.1:39688');
INSERT INTO JobExtraInfo VALUES(1,'jobname','gb-cap');
INSERT INTO JobExtraInfo VALUES(1,'localuser','nobody:nogroup');
INSERT INTO JobExtraInfo VALUES(1,'lrms','SLURM');
INSERT INTO JobExtraInfo VALUES(1,'nodenames','vm');
INSERT INTO JobExtraInfo VALUES(1,'systemsoftware','Debian GNU/Linux 12 (bookworm)');
CREATE TABLE DBConfig (
   KeyName      TEXT PRIMARY KEY, 
   KeyValue     TEXT NOT NULL
);
INSERT INTO DBConfig VALUES('DBSCHEMA_VERSION','1');
DELETE FROM sqlite_sequence;
INSERT INTO sqlite_sequence VALUES('Endpoints',1);
INSERT INTO sqlite_sequence VALUES('Queues',1);
INSERT INTO sqlite_sequence VALUES('Users',1);
INSERT INTO sqlite_sequence VALUES('WLCGVOs',1);
INSERT INTO sqlite_sequence VALUES('Status',2);
INSERT INTO sqlite_sequence VALUES('AAR',1);
CREATE UNIQUE INDEX AAR_JobID_IDX ON AAR(JobID);
CREATE INDEX AAR_LocalJobID_IDX ON AAR(LocalJobID);
CREATE INDEX AAR_EndpointID_IDX ON AAR(EndpointID);
CREATE INDEX AAR_QueueID_IDX ON AAR(QueueID);
CREATE INDEX AAR_UserID_IDX ON AAR(UserID);
CREATE INDEX AAR_StatusID_IDX ON AAR(StatusID);
CREATE INDEX AAR_SubmitTime_IDX ON AAR(SubmitTime);
CREATE INDEX AAR_EndTime_IDX ON AAR(EndTime);
CREATE INDEX Endpoints_Interface_IDX ON Endpoints(Interface);
CREATE UNIQUE INDEX Queues_Name_IDX ON Queues(Name);
CREATE UNIQUE INDEX Users_Name_IDX ON Users(Name);
CREATE UNIQUE INDEX WLCGVOs_Name_IDX ON WLCGVOs(Name);
CREATE UNIQUE INDEX Status_Name_IDX ON Status(Name);
CREATE INDEX AuthTokenAttributes_RecordID_IDX ON AuthTokenAttributes(RecordID);
CREATE INDEX AuthTokenAttributes_AttrKey_IDX ON AuthTokenAttributes(AttrKey);
CREATE INDEX JobEvents_RecordID_IDX ON JobEvents(RecordID);
CREATE INDEX JobEvents_EventKey_IDX ON JobEvents(EventKey);
CREATE INDEX RunTimeEnvironments_RecordID_IDX ON RunTimeEnvironments(RecordID);
CREATE INDEX RunTimeEnvironments_RTEName_IDX ON RunTimeEnvironments(RTEName);
CREATE INDEX DataTransfers_RecordID_IDX ON DataTransfers(RecordID);
CREATE INDEX DataTransfers_URL_IDX ON DataTransfers(URL);
CREATE INDEX JobExtraInfo_RecordID_IDX ON JobExtraInfo(RecordID);
CREATE INDEX JobExtraInfo_InfoKey_IDX ON JobExtraInfo(InfoKey);
COMMIT;
