//! The store: the core's state and journal, one transaction per event.
