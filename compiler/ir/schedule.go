package ir

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // timezone names are checked the same on every machine

	"github.com/fleetc/fleetc/spec"
)

// Schedule is one EventBridge Scheduler schedule that puts Event on the bus.
type Schedule struct {
	Name        string
	Path        string
	Description string
	// Expression is Scheduler's schedule_expression: "cron(<six fields>)" or "rate(<n unit>)".
	Expression     string
	Timezone       string // "" : UTC
	Event          *Event
	Detail         map[string]any // never nil
	FlexibleWindow time.Duration  // 0: off
	ScheduleName   string         // <fleet>-<name>
}

// Scheduler limits: a flexible window is whole minutes, 1 to 1440 (maximum_window_in_minutes).
const (
	MinFlexibleWindow = time.Minute
	MaxFlexibleWindow = 1440 * time.Minute
)

// SchedulerRoleName is the role every schedule of f assumes; SchedulesDLQName their
// dead-letter queue.
func SchedulerRoleName(f *Fleet) string { return f.Name + "-scheduler" }

// SchedulesDLQName is the queue Scheduler sends deliveries to after its retries.
func SchedulesDLQName(f *Fleet) string { return f.Name + "-schedules-dlq" }

func (l *lowerer) lowerSchedules() {
	for _, name := range slices.Sorted(maps.Keys(l.src.Schedules)) {
		if sc := l.lowerSchedule(name, l.src.Schedules[name]); sc != nil {
			l.f.Schedules = append(l.f.Schedules, sc)
		}
	}
}

func (l *lowerer) lowerSchedule(name string, s *spec.Schedule) *Schedule {
	p := spec.Pointer("schedules", name)
	sc := &Schedule{Name: name, Path: p, Description: s.Description, Timezone: s.Timezone, Detail: s.Detail,
		ScheduleName: l.f.Name + "-" + name}
	if sc.Detail == nil {
		sc.Detail = map[string]any{}
	}
	ok := true
	switch {
	case (s.Cron == "") == (s.Rate == ""):
		d := l.ds.Errorf("P008", p, "schedule %s needs exactly one of cron and rate", name)
		d.Detail = `cron: "0 9 ? * MON-FRI *" (minutes hours day-of-month month day-of-week year) or rate: "15 minutes".`
		ok = false
	case s.Cron != "":
		if err := CheckCron(s.Cron); err != nil {
			d := l.ds.Errorf("P008", p+"/cron", "schedule %s: cron %q: %v", name, s.Cron, err)
			d.Detail = "Six fields: minutes (0-59) hours (0-23) day-of-month (1-31, ? L W) month (1-12, JAN-DEC) day-of-week (1-7, SUN-SAT, ? L #) year (1970-2199), with , - * /; one of day-of-month and day-of-week is ?."
			ok = false
		}
		sc.Expression = "cron(" + strings.Join(strings.Fields(s.Cron), " ") + ")"
	default:
		if err := CheckRate(s.Rate); err != nil {
			l.ds.Errorf("P008", p+"/rate", "schedule %s: rate %q: %v", name, s.Rate, err)
			ok = false
		}
		sc.Expression = "rate(" + strings.Join(strings.Fields(s.Rate), " ") + ")"
	}
	if s.Timezone != "" {
		if _, err := time.LoadLocation(s.Timezone); err != nil || s.Timezone == "Local" {
			l.ds.Errorf("P008", p+"/timezone", "schedule %s: %q is not an IANA time zone name (e.g. Europe/Paris, America/New_York)", name, s.Timezone)
			ok = false
		}
	}
	if s.FlexibleWindow != nil {
		w := s.FlexibleWindow.Duration
		if w < MinFlexibleWindow || w > MaxFlexibleWindow || w%time.Minute != 0 {
			l.ds.Errorf("P008", p+"/flexible_window", "schedule %s: flexible_window %gm is not whole minutes from 1m to 1440m", name, w.Minutes())
			ok = false
		}
		sc.FlexibleWindow = w
	}
	if sc.Event = l.f.Event(s.Event); sc.Event == nil {
		l.undefined(p+"/event", "event", s.Event, slices.Sorted(maps.Keys(l.src.Events)))
		ok = false
	}
	if !ok {
		return nil
	}
	return sc
}

var rateRE = regexp.MustCompile(`^([0-9]+) (minute|minutes|hour|hours|day|days)$`)

// CheckRate checks the inside of a Scheduler rate(...) expression: a positive whole number
// and a unit, singular for 1 and plural otherwise (Scheduler refuses "1 minutes").
func CheckRate(s string) error {
	m := rateRE.FindStringSubmatch(strings.Join(strings.Fields(s), " "))
	if m == nil {
		return fmt.Errorf(`want a whole number and minute(s), hour(s) or day(s), e.g. "15 minutes"`)
	}
	n, err := strconv.Atoi(m[1])
	if err != nil || n <= 0 {
		return fmt.Errorf("the value must be a positive whole number")
	}
	if plural := strings.HasSuffix(m[2], "s"); plural != (n != 1) {
		return fmt.Errorf("say %q for %d", map[bool]string{true: "minutes/hours/days", false: "minute/hour/day"}[n != 1], n)
	}
	return nil
}

// cronField is one field of a cron expression: its name, range, names and special tokens.
type cronField struct {
	name     string
	min, max int
	names    []string // index i is min+i
	special  *regexp.Regexp
	question bool // ? allowed
}

var cronFields = []cronField{
	{name: "minutes", min: 0, max: 59},
	{name: "hours", min: 0, max: 23},
	{name: "day-of-month", min: 1, max: 31, question: true, special: regexp.MustCompile(`^(L|LW|([1-9]|[12][0-9]|3[01])W)$`)},
	{name: "month", min: 1, max: 12, names: strings.Fields("JAN FEB MAR APR MAY JUN JUL AUG SEP OCT NOV DEC")},
	{name: "day-of-week", min: 1, max: 7, question: true, names: strings.Fields("SUN MON TUE WED THU FRI SAT"),
		special: regexp.MustCompile(`^([1-7]|SUN|MON|TUE|WED|THU|FRI|SAT)(L|#[1-5])$|^L$`)},
	{name: "year", min: 1970, max: 2199},
}

// CheckCron checks the six fields of a Scheduler cron(...) expression, naming the field at
// fault: minutes hours day-of-month month day-of-week year, each a list of *, values,
// ranges and /increments; ? in exactly one of day-of-month and day-of-week.
func CheckCron(s string) error {
	fs := strings.Fields(s)
	if len(fs) != len(cronFields) {
		return fmt.Errorf("%d fields; want 6: minutes hours day-of-month month day-of-week year", len(fs))
	}
	for i, f := range fs {
		if err := cronFields[i].check(strings.ToUpper(f)); err != nil {
			return fmt.Errorf("field %d (%s) %q: %v", i+1, cronFields[i].name, f, err)
		}
	}
	if (fs[2] == "?") == (fs[4] == "?") {
		return fmt.Errorf("exactly one of day-of-month (field 3) and day-of-week (field 5) must be ?")
	}
	return nil
}

func (c cronField) check(f string) error {
	if f == "?" {
		if !c.question {
			return fmt.Errorf("? is only for day-of-month and day-of-week")
		}
		return nil
	}
	for _, item := range strings.Split(f, ",") {
		if c.special != nil && c.special.MatchString(item) {
			continue
		}
		base, step, stepped := strings.Cut(item, "/")
		if stepped {
			if n, err := strconv.Atoi(step); err != nil || n < 1 || n > c.max {
				return fmt.Errorf("increment %q is not 1 to %d", step, c.max)
			}
		}
		if base == "*" {
			continue
		}
		// Both ends of a range must be values; whether a range may wrap (FRI-MON) is left
		// to Scheduler, which documents no rule for it.
		lo, hi, isRange := strings.Cut(base, "-")
		if _, err := c.value(lo); err != nil {
			return err
		}
		if isRange {
			if _, err := c.value(hi); err != nil {
				return err
			}
		}
	}
	return nil
}

func (c cronField) value(s string) (int, error) {
	if i := slices.Index(c.names, s); i >= 0 {
		return c.min + i, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < c.min || n > c.max {
		return 0, fmt.Errorf("%q is not %d to %d%s", s, c.min, c.max, map[bool]string{true: " or a name (" + strings.Join(c.names, " ") + ")", false: ""}[len(c.names) > 0])
	}
	return n, nil
}
