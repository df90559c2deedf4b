package testutil
