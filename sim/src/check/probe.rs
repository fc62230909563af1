//! Every rare situation a world can reach, one variant each: what the simulator counts to
//! show its worlds reach what its checks are for (the summary's "probes" list, a kept
//! regression's counts). A name is printed as written here; `sim/tests/seeds.rs` holds
//! every probe of `Probe::SWARM` to be reached within its window of seeds, so a weaker
//! generator shows there, and a new probe joins that list by being declared here.
//!
//! The partition worlds (`sim/src/parts/`) count their own events under their own names.

use std::collections::BTreeMap;

macro_rules! probes {
    (
        swarm { $($swarm:ident = $swarm_name:literal,)+ }
        elsewhere { $($other:ident = $other_name:literal,)+ }
    ) => {
        /// A rare situation a world reached.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Probe {
            $($swarm,)+
            $($other,)+
        }

        impl Probe {
            /// Those the default worlds reach within `sim/tests/seeds.rs`'s window.
            pub const SWARM: &'static [Probe] = &[$(Probe::$swarm,)+];
            /// Those reached only in other fault modes (`overload`, `heavy`) or more
            /// rarely than one seed in twenty.
            pub const ELSEWHERE: &'static [Probe] = &[$(Probe::$other,)+];

            /// The name it is counted under.
            pub fn name(self) -> &'static str {
                match self {
                    $(Probe::$swarm => $swarm_name,)+
                    $(Probe::$other => $other_name,)+
                }
            }
        }
    };
}

probes! {
    swarm {
        DSTFoldDueTime = "DST fold due time",
        DSTGapDueTime = "DST gap due time",
        DSTShapedDueTimeUnderAChosenPolicy = "DST-shaped due time under a chosen policy",
        ABatchsAnswerLostItsReportsHeldToBeSentAgain = "a batch's answer lost: its reports held to be sent again",
        AReportSentAgainAfterItsBatchsAnswerWasLost = "a report sent again after its batch's answer was lost",
        ActorForgottenFromAPauseOrAQueuedRun = "actor forgotten from a pause or a queued run",
        AdoptionUnderTheRunsOwnFence = "adoption under the run's own fence",
        AlertHeldByTheThrottle = "alert held by the throttle",
        ApprovalExpired = "approval expired",
        ApprovalGiven = "approval given",
        ApprovalRefusedNotParked = "approval refused: not parked",
        BackfillAccepted = "backfill accepted",
        BackfillAsked = "backfill asked",
        BackfillBurst = "backfill burst",
        BackfillCaughtUp = "backfill caught up",
        BackfillFromTheBeginning = "backfill from the beginning",
        BackfillOverAnEarlierSchedulesRuns = "backfill over an earlier schedule's runs",
        BackfillRan = "backfill ran",
        BackfillRefusedAsTheJournalSays = "backfill refused as the journal says",
        BackfillRefusedAlreadyAccounted = "backfill refused: already accounted",
        BackfillRefusedEmptyRange = "backfill refused: empty range",
        BackfillRefusedNoDueTimes = "backfill refused: no due times",
        BackfillRefusedNoSuchJob = "backfill refused: no such job",
        BackfillRefusedOwedLineFull = "backfill refused: owed line full",
        BackfillRefusedTooManyDueTimes = "backfill refused: too many due times",
        BackfillSkipped = "backfill skipped",
        BoundAccepted25HourlyMissedCounts = "bound accepted: 25 hourly missed counts",
        BoundAccepted32OwedSegmentsUpToTheFrontier = "bound accepted: 32 owed segments up to the frontier",
        BoundAcceptedAConfigAtItsBoundLoadedWholePutPartsChanged = "bound accepted: a config at its bound, loaded whole (put_parts: changed)",
        BoundAcceptedANewRowJustUnderTheSequenceCounter = "bound accepted: a new row just under the sequence counter",
        BoundAcceptedAnOpenRunsFenceJustUnderTheCounter = "bound accepted: an open run's fence just under the counter",
        BoundAcceptedAnOwnerFenceJustUnderTheCounter = "bound accepted: an owner fence just under the counter",
        BoundAcceptedManualRunsAtTheHourlyCap = "bound accepted: manual runs at the hourly cap",
        BoundAcceptedOwedSegmentsStartedWholeNotWalked = "bound accepted: owed segments started whole, not walked",
        BufferedOverlapRun = "buffered overlap run",
        CatchUpAfterAQuotaHold = "catch-up after a quota hold",
        CatchUpAfterDowntime = "catch-up after downtime",
        CatchUpAfterSleep = "catch-up after sleep",
        StartToldWhyItsDueTimesWereLate = "start told why its due times were late, as settled",
        CatchUpAfterTheClockWasSetForward = "catch-up after the clock was set forward",
        CatchUpRun = "catch-up run",
        CatchUpOnceSkippedLateDueTimesForANewerCatchUp = "catch_up_once skipped late due times for a newer catch-up",
        ChangeAfterABackfillBurst = "change after a backfill burst",
        ChangeAfterABackfillBurstNotTaken = "change after a backfill burst not taken",
        ClockGapToldAsItWas = "clock gap told as it was",
        ClockGapAsleep = "clock gap: asleep",
        ClockGapSetBack = "clock gap: set back",
        ClockGapSetForward = "clock gap: set forward",
        ClockHeldAheadOfTheStores = "clock held ahead of the store's",
        ClockHeldAheadReleasedAlone = "clock held ahead released (alone)",
        ClockHeldBehindReleasedAlone = "clock held behind released (alone)",
        ClockHeldBehindTheStores = "clock held behind the store's",
        ClockSetForwardSkippedDueTimes = "clock set forward skipped due times",
        CommandAnsweredAsTheJournalSays = "command answered as the journal says",
        CommandForNoSuchJobRefused = "command for no such job refused",
        CommandRefusedAlreadySo = "command refused: already so",
        ConcurrencyKeyChanged = "concurrency key changed",
        ConcurrencyKeyChangedWhileItsRunWasOpen = "concurrency key changed while its run was open",
        ConfirmRefusedNothingToConfirm = "confirm refused: nothing to confirm",
        ConfirmRefusedWrongDigest = "confirm refused: wrong digest",
        Confirmed = "confirmed",
        CronDatesCheckedOverYearsZ1 = "cron dates checked over years (Z1)",
        CronDueTimePastItsMinutesFirstSecond = "cron due time past its minute's first second",
        CronTextTypedNearItsBoundsZ2 = "cron text typed near its bounds (Z2)",
        CurrentResultSettledItsRun = "current result settled its run",
        DamageRefused26HourlyMissedCounts = "damage refused: 26 hourly missed counts",
        DamageRefused33OwedSegments = "damage refused: 33 owed segments",
        DamageRefusedABufferedOverlapOfTwoMiscounted = "damage refused: a buffered overlap of two miscounted",
        DamageRefusedACoverCountingNothing = "damage refused: a cover counting nothing",
        DamageRefusedACoverEndingBeforeItStarts = "damage refused: a cover ending before it starts",
        DamageRefusedAGraceOverTheMaximum = "damage refused: a grace over the maximum",
        DamageRefusedAHeldDefinitionOfAnotherJob = "damage refused: a held definition of another job",
        DamageRefusedANewerFormat = "damage refused: a newer format",
        DamageRefusedAParkedRunWithACancelSent = "damage refused: a parked run with a cancel sent",
        DamageRefusedARowAtTheSequenceCounter = "damage refused: a row at the sequence counter",
        DamageRefusedARunAndARetryAtOnce = "damage refused: a run and a retry at once",
        DamageRefusedASegmentOverABatchMiscounted = "damage refused: a segment over a batch miscounted",
        DamageRefusedATickUnderTheMinimum = "damage refused: a tick under the minimum",
        DamageRefusedAnEndOnAJobThatIsNotAOneShot = "damage refused: an end on a job that is not a one-shot",
        DamageRefusedAnIncidentListedTwice = "damage refused: an incident listed twice",
        DamageRefusedAnOwedDueTimePastTheFrontier = "damage refused: an owed due time past the frontier",
        DamageRefusedAnOwedSegmentCountingNothing = "damage refused: an owed segment counting nothing",
        DamageRefusedAnOwedSegmentEndingBeforeItStarts = "damage refused: an owed segment ending before it starts",
        DamageRefusedAnOwedSegmentMiscounted = "damage refused: an owed segment miscounted",
        DamageRefusedAnOwedSegmentStartingOnTheLastOnesEnd = "damage refused: an owed segment starting on the last one's end",
        DamageRefusedAnOwnerFenceAheadOfTheCounter = "damage refused: an owner fence ahead of the counter",
        DamageRefusedAnOwnerLeaseUnderSharedCoordination = "damage refused: an owner lease under shared coordination",
        DamageRefusedAnOwnerThatIsDraining = "damage refused: an owner that is draining",
        DamageRefusedAnOwnerUnknownToTheStore = "damage refused: an owner unknown to the store",
        DamageRefusedCountersBehindARowLeftAsItIs = "damage refused: counters behind a row left as it is",
        DamageRefusedManualRunsOverTheHourlyCap = "damage refused: manual runs over the hourly cap",
        DamageRefusedNoRunsPerProcess = "damage refused: no runs per process",
        DamageRefusedOneSequenceNumberTwice = "damage refused: one sequence number twice",
        DamageRefusedOwedSegmentsSwapped = "damage refused: owed segments swapped",
        DamageRefusedTheSwitchWithoutWatchedSince = "damage refused: the switch without watched_since",
        DamageRefusedTwoJobsHoldingOneOpenRun = "damage refused: two jobs holding one open run",
        DamageRefusedTwoRowsWithOneName = "damage refused: two rows with one name",
        DamageRefusedUnconfirmedOwingDueTimes = "damage refused: unconfirmed owing due times",
        DamageRefusedUnconfirmedWithoutItsDefinition = "damage refused: unconfirmed without its definition",
        DamageRefusedWaitingWhileARunIsOpen = "damage refused: waiting while a run is open",
        DamageRefusedWatchedSinceWithoutTheSwitch = "damage refused: watched_since without the switch",
        DefinitionAccepted = "definition accepted",
        DefinitionAskedForAgainChangedNothing = "definition asked for again changed nothing",
        DefinitionAtABoundSent = "definition at a bound sent",
        DefinitionBreakingARuleSent = "definition breaking a rule sent",
        DefinitionHeldForConfirmation = "definition held for confirmation",
        DefinitionHeldToldInTheReply = "definition held, told in the reply",
        DeposedOwnerToldToCancelARun = "deposed owner told to cancel a run",
        DigestToldForAHeldDefinition = "digest told for a held definition",
        DowntimeSkippedDueTimes = "downtime skipped due times",
        DownstreamRanAfterItsUpstreams = "downstream ran after its upstreams",
        DownstreamSkippedAsItsUpstreamsLedgerSays = "downstream skipped as its upstream's ledger says (Y1)",
        DownstreamSkippedForItsUpstream = "downstream skipped for its upstream",
        DownstreamStartedAfterItsUpstreamsSettledOk = "downstream started after its upstreams settled ok (Y1)",
        DrainAskedAgain = "drain asked again",
        DrainCompletedAfterItsLastRun = "drain completed after its last run",
        DrainCompletedAtOnce = "drain completed at once",
        DrainHandedTheLeaseOver = "drain handed the lease over",
        DueTimeSkippedWhileParked = "due time skipped while parked",
        DueTimeWaitedForItsLane = "due time waited for its lane",
        DueTimeWaitedForTheProcessCap = "due time waited for the process cap",
        EffectLoggedWithItsFacts = "effect logged with its facts",
        EntryOfBackfillsMergedInAFullLine = "entry of backfills merged in a full line",
        FailedOut = "failed out",
        HeldDefinitionConfirmedInTheReply = "held definition confirmed in the reply",
        HeldProcessToldToWakeWithinATick = "held process told to wake within a tick",
        IdleProcessToldToWakeForWorkAlone = "idle process told to wake for work alone",
        InvalidDefinitionRefusedByItsRule = "invalid definition refused by its rule",
        JitteredStart = "jittered start",
        JitteredStartsSpread = "jittered starts spread",
        JournalWrittenOnTheStoresTime = "journal written on the store's time",
        KeylessStartUnderTheCapNoOlderKeylessWaiter = "keyless start under the cap, no older keyless waiter",
        LaneBusyDueRunWaited = "lane busy, due run waited",
        LanesWithRoomHoldNoWaiterAfterATick = "lanes with room hold no waiter after a tick",
        LeaseExpiredWhileRunning = "lease expired while running",
        LeftRunNoLongerOpenAtStartUp = "left run no longer open at start-up",
        LeftRunReportedAtStartUp = "left run reported at start-up",
        LivenessExtendedForABacklog = "liveness extended for a backlog",
        LostAfterItsLeaseLapsed = "lost after its lease lapsed",
        LostRunOfAJobNotSafeToRepeat = "lost run of a job not safe to repeat",
        LostRunOfASafeJobRepeated = "lost run of a safe job repeated",
        LostRunsAlertTellsThePauseAsItIs = "lost run's alert tells the pause as it is",
        ManualRun = "manual run",
        MissedAsLatePastTheGrace = "missed as late past the grace",
        MissedAsLateWithinASecondOfTheGrace = "missed as late within a second of the grace",
        NoSuccessToldByTheDeadMansSwitch = "no success told by the dead-man's switch",
        OneShotCompleted = "one-shot completed",
        OneShotExpired = "one-shot expired",
        OneShotsEndShownAsTheJournalSays = "one-shot's end shown as the journal says",
        OverlapRecorded = "overlap recorded",
        OwedHeldToTheMissedRule = "owed held to the missed rule",
        OwedLineFullOfDisjointRuns = "owed line full of disjoint runs",
        OwnerLeaseTakenBackAfterItLapsed = "owner lease taken back after it lapsed",
        OwnerLeaseTakenOverAfterItLapsed = "owner lease taken over after it lapsed",
        OwnerShownAsTheLeaseHoldsIt = "owner shown as the lease holds it",
        ParkedRunSettledByItsResult = "parked run settled by its result",
        ParkedRunShownAsTheJournalSays = "parked run shown as the journal says",
        PauseAfterFailuresInARowTold = "pause after failures in a row told",
        PauseNoteAtOrOverItsBound = "pause note at or over its bound",
        PauseRefusedNoteTooLong = "pause refused: note too long",
        PausedAfterFailuresInARow = "paused after failures in a row",
        PausedByTheSystem = "paused by the system",
        PausedDueTimes = "paused due times",
        PausedWhileARetryWaits = "paused while a retry waits",
        ProcessCapReached = "process cap reached",
        ProcessForgottenAfterADaysSilence = "process forgotten after a day's silence",
        QuotaHold = "quota hold",
        QuotaHoldSkippedDueTimes = "quota hold skipped due times",
        ReleaseItsRuleAllows = "release its rule allows",
        RemovedWithDueTimes = "removed with due times",
        RepeatedLossHeldAsOneIncident = "repeated loss held as one incident",
        RequiredBatchOf1000 = "required batch of 1000",
        Rescheduled = "rescheduled",
        RescheduledDueTimes = "rescheduled due times",
        ResultDatedByItsOwnMeasure = "result dated by its own measure",
        ResultWithAStaleFenceSettledNothing = "result with a stale fence settled nothing",
        RetryAfterAQuotaHold = "retry after a quota hold",
        RetryCoveredWhatFailed = "retry covered what failed",
        RetryCrossingARestart = "retry crossing a restart",
        RetryOlderThanTheWindowGivenUpAtAPause = "retry older than the window given up at a pause",
        RetryStarted = "retry started",
        RetryTimedByTheBackoff = "retry timed by the backoff",
        RunAdoptedByALaterIncarnation = "run adopted by a later incarnation",
        RunNowRefusedAwaitingApproval = "run now refused: awaiting approval",
        RunNowRefusedInFlight = "run now refused: in flight",
        RunNowRefusedNotSafeToRepeat = "run now refused: not safe to repeat",
        RunNowRefusedRateLimited = "run now refused: rate limited",
        RunParkedAwaitingApproval = "run parked awaiting approval",
        RunThatFoundNothingToDoRecordedSkipped = "run that found nothing to do recorded skipped",
        RunTimedOut = "run timed out",
        RunToldStalled = "run told stalled",
        SeveralReportsCommittedInOneBatch = "several reports committed in one batch",
        SleepSkippedDueTimes = "sleep skipped due times",
        StaleApprovalRefused = "stale approval refused",
        StaleConfirmRefused = "stale confirm refused",
        StaleResultRefused = "stale result refused",
        StallWatchedByItsJobsWake = "stall watched by its job's wake",
        StandbyTickedWhileTheOwnerLived = "standby ticked while the owner lived",
        StartHeldToTheLine = "start held to the line",
        StartInItsLanesOrder = "start in its lane's order",
        StartUpBegunAgainAsANewIncarnation = "start-up begun again as a new incarnation",
        StartedAfterAQuotaHold = "started after a quota hold",
        StateRoundTrip = "state round trip",
        StoresClockAwayFromClocksThatAgree = "store's clock away from clocks that agree",
        StoresClockCameToClocksThatAgree = "store's clock came to clocks that agree",
        SuccessAfterANoSuccessAlert = "success after a no_success alert",
        TimedOutAGraceAfterItsCancel = "timed out a grace after its cancel",
        TimeoutCancelSent = "timeout cancel sent",
        TooLateForTheCatchUpWindow = "too late for the catch-up window",
        TooLateOnlyPastTheCatchUpWindow = "too late only past the catch-up window",
        ViewsComparedWithTheJournal = "views compared with the journal",
        ViewsCursorHeldToTheLine = "views' cursor held to the line",
        ViewsMissedCountHeldToTheJournalsSkips = "views' missed count held to the journal's skips",
        ViewsOwedCountHeldToTheLine = "views' owed count held to the line",
        ViewsStatusAndLastRunHeldToTheJournal = "views' status and last run held to the journal",
        WaitHeldToAFullLaneOrCap = "wait held to a full lane or cap",
        WaitKeptThroughANewIncarnationsEvent = "wait kept through a new incarnation's event",
        WaitedThenStarted = "waited then started",
        WitnessesToldToWakeWithinATick = "witnesses told to wake within a tick",
    }
    elsewhere {
        CommandRefusedAsTheJournalSays = "command refused as the journal says",
        CalendarSchedulesCheckedOverWeeksZ3 = "calendar schedules checked over weeks (Z3)",
        CalendarLeftOutABaseDueTimeInTheWorld = "calendar left out a base due time in the world",
        CalendarRolledADueTimeIntoTheWorld = "calendar rolled a due time into the world",
        BackfillRefusedOther = "backfill refused: other",
        DamageRefusedCountersBehindAccepted = "damage refused: counters behind (accepted?)",
        HandedBackBackfillCoverMergedWithTheSchedulesOwn = "handed-back backfill cover merged with the schedule's own",
        BoundAcceptedCountersJustPastEveryRow = "bound accepted: counters just past every row",
        ConcurrencyKeyChangedWhileItWaited = "concurrency key changed while it waited",
        DamageRefusedAOneShotEndedBeforeItsInstant = "damage refused: a one-shot ended before its instant",
        DamageRefusedAWrittenRowBeyondTheSequenceCounter = "damage refused: a written row beyond the sequence counter",
        DamageRefusedAWrittenRunAheadOfTheCounters = "damage refused: a written run ahead of the counters",
        DamageRefusedAnOpenRunsFenceAtTheCounter = "damage refused: an open run's fence at the counter",
        DamageRefusedAnOpenRunsIdAtTheCounter = "damage refused: an open run's id at the counter",
        DamageRefusedUnconfirmedWithARunOpen = "damage refused: unconfirmed with a run open",
        ManualRunAskedDuringADrainStartedByTheNextOwner = "manual run asked during a drain started by the next owner",
        ResultsReportedAtASlowTurnsEnd = "results reported at a slow turn's end",
        TurnSlowerThanTheTick = "turn slower than the tick",
    }
}

impl Probe {
    /// How many probes there are (the length of a `ProbeCounts`).
    pub const COUNT: usize = Probe::SWARM.len() + Probe::ELSEWHERE.len();

    /// Every probe.
    pub fn all() -> impl Iterator<Item = Probe> {
        Probe::SWARM.iter().chain(Probe::ELSEWHERE).copied()
    }
}

/// How often each probe was reached: an array indexed by the probe, so counting one is an
/// add (it was a map lookup by name, thousands of times a world).
#[derive(Clone, Debug)]
pub struct ProbeCounts([u64; Probe::COUNT]);

impl Default for ProbeCounts {
    fn default() -> ProbeCounts {
        ProbeCounts([0; Probe::COUNT])
    }
}

impl ProbeCounts {
    pub fn add(&mut self, probe: Probe, n: u64) {
        self.0[probe as usize] += n;
    }

    pub fn get(&self, probe: Probe) -> u64 {
        self.0[probe as usize]
    }

    /// The counts reached, by name (what a summary and a bank keep).
    pub fn names(&self) -> BTreeMap<&'static str, u64> {
        let mut into = BTreeMap::new();
        self.clone().drain_into(&mut into);
        into
    }

    /// Adds every count reached to `into`, by name (what a summary and a bank keep), and
    /// clears these.
    pub fn drain_into(&mut self, into: &mut BTreeMap<&'static str, u64>) {
        for p in Probe::all() {
            let n = std::mem::take(&mut self.0[p as usize]);
            if n > 0 {
                *into.entry(p.name()).or_default() += n;
            }
        }
    }
}

impl std::fmt::Display for Probe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::Probe;

    #[test]
    fn names_are_distinct_and_indexes_dense() {
        let mut names: Vec<&str> = Probe::all().map(Probe::name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Probe::COUNT);
        for (i, p) in Probe::all().enumerate() {
            assert_eq!(p as usize, i);
        }
    }
}
