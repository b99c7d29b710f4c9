"""The job-flow family: jobs through a scheduler, grid CE or cloud job service."""
