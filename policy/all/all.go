// Package all registers every policy enforcer (as datapath/all does for
// Service datapaths): a program that opens enforcers by name imports it.
package all
