import { QueryCache, MutationCache, QueryClient, useQuery } from '@tanstack/react-query';
import { Link, Outlet, createRootRouteWithContext, createRoute, createRouter, redirect } from '@tanstack/react-router';
import { ApiError, apiCall, type KeyInfo } from './lib/api';
import { auth, useAuth } from './lib/auth';
import { parseBankSearch, parseExperimentsSearch, parseNewExperimentSearch, safeRedirect } from './lib/search';
import { DataPage } from './pages/DataPage';
import { ExperimentPage } from './pages/ExperimentPage';
import { ExperimentsPage } from './pages/ExperimentsPage';
import { NewExperimentPage } from './pages/NewExperimentPage';
import { ReportPage } from './pages/ReportPage';
import { ReportsPage } from './pages/ReportsPage';
import { SampleSetPage } from './pages/SampleSetPage';
import { SignInPage } from './pages/SignInPage';
import { parseFeaturesSearch, parseModelsSearch } from './lib/catalog';
import { FeaturePage } from './pages/FeaturePage';
import { FeaturesPage } from './pages/FeaturesPage';
import { ModelPage } from './pages/ModelPage';
import { ModelsPage } from './pages/ModelsPage';
import { ServedModelPage } from './pages/ServedModelPage';
import { ServingPage } from './pages/ServingPage';

/** A 401 from any call signs the browser out (the key was revoked, expired or is unknown) and says why. */
const onError = (err: unknown) => {
  if (err instanceof ApiError && err.status === 401 && auth.get().key) auth.signOut(err.message);
};

export const queryClient = new QueryClient({
  queryCache: new QueryCache({ onError }),
  mutationCache: new MutationCache({ onError }),
  defaultOptions: {
    queries: {
      // a 4xx will not change by asking again
      retry: (count, err) => !(err instanceof ApiError && err.status < 500) && count < 2,
      refetchOnWindowFocus: true,
    },
  },
});

const rootRoute = createRootRouteWithContext<{ queryClient: QueryClient }>()({
  component: () => <Outlet />,
  notFoundComponent: NotFound,
});

const indexRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: '/',
  beforeLoad: () => {
    throw redirect({ to: auth.get().key ? '/experiments' : '/signin' });
  },
});

const signinRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: '/signin',
  validateSearch: (raw: Record<string, unknown>): { redirect?: string } =>
    typeof raw.redirect === 'string' ? { redirect: raw.redirect } : {},
  // already signed in: straight on to the page asked for
  beforeLoad: ({ search }) => {
    if (auth.get().key) throw redirect({ href: safeRedirect(search.redirect) });
  },
  component: function SignInRoute() {
    return <SignInPage redirect={signinRoute.useSearch().redirect} />;
  },
});

/** Every page below needs a key: without one the sign-in form comes first, then the page asked for. */
const appRoute = createRoute({
  getParentRoute: () => rootRoute,
  id: 'signed-in',
  beforeLoad: ({ location }) => {
    if (!auth.get().key) throw redirect({ to: '/signin', search: { redirect: location.href } });
  },
  component: AppLayout,
});

const experimentsRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '/experiments',
  validateSearch: parseExperimentsSearch,
  component: function ExperimentsRoute() {
    return <ExperimentsPage search={experimentsRoute.useSearch()} />;
  },
});

const newExperimentRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '/experiments/new',
  validateSearch: parseNewExperimentSearch,
  component: function NewExperimentRoute() {
    return <NewExperimentPage search={newExperimentRoute.useSearch()} />;
  },
});

const experimentRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '/experiments/$id',
  component: function ExperimentRoute() {
    return <ExperimentPage id={experimentRoute.useParams().id} />;
  },
});

const dataRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '/data',
  validateSearch: parseBankSearch,
  component: function DataRoute() {
    return <DataPage search={dataRoute.useSearch()} />;
  },
});

const sampleSetRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '/data/$id',
  component: function SampleSetRoute() {
    return <SampleSetPage id={sampleSetRoute.useParams().id} />;
  },
});

const reportsRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '/reports',
  component: ReportsPage,
});

const reportRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '/reports/$id',
  component: function ReportRoute() {
    return <ReportPage id={reportRoute.useParams().id} />;
  },
});

const featuresRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '/features',
  validateSearch: parseFeaturesSearch,
  component: function FeaturesRoute() {
    return <FeaturesPage search={featuresRoute.useSearch()} />;
  },
});

const featureRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '/features/$id',
  component: function FeatureRoute() {
    return <FeaturePage id={featureRoute.useParams().id} />;
  },
});

const modelsRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '/models',
  validateSearch: parseModelsSearch,
  component: function ModelsRoute() {
    return <ModelsPage search={modelsRoute.useSearch()} />;
  },
});

const modelRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '/models/$id',
  component: function ModelRoute() {
    return <ModelPage id={modelRoute.useParams().id} />;
  },
});

const servingRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '/serving',
  component: ServingPage,
});

const servedModelRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '/serving/$id',
  component: function ServedModelRoute() {
    return <ServedModelPage id={servedModelRoute.useParams().id} />;
  },
});

const catalogRoutes = [featuresRoute, featureRoute, modelsRoute, modelRoute, servingRoute, servedModelRoute];

const routeTree = rootRoute.addChildren([
  indexRoute,
  signinRoute,
  appRoute.addChildren([
    experimentsRoute,
    newExperimentRoute,
    experimentRoute,
    dataRoute,
    sampleSetRoute,
    ...catalogRoutes,
    reportsRoute,
    reportRoute,
  ]),
]);

export const router = createRouter({ routeTree, context: { queryClient }, defaultPreload: false, scrollRestoration: true });

declare module '@tanstack/react-router' {
  interface Register {
    router: typeof router;
  }
}

// Signed out (the button, a 401, another tab): to the sign-in form, which comes back here afterwards;
// the cached answers of the old key are dropped once the signed-in pages are gone.
auth.subscribe(() => {
  if (auth.get().key) return;
  const here = router.state.location;
  if (here.pathname === '/signin') return;
  void router.navigate({ to: '/signin', search: { redirect: here.href } }).then(() => queryClient.clear());
});

/** The frame of the signed-in pages: navigation, who is signed in, sign out. */
function AppLayout() {
  const { key } = useAuth();
  const me = useQuery({
    queryKey: ['me', key],
    queryFn: () => apiCall<KeyInfo>(key!, '/keys/me'),
    enabled: Boolean(key),
    staleTime: 60_000,
  });
  // signed out: the subscription above is taking the browser to the sign-in form
  if (!key) return null;
  return (
    <>
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <header className="top">
        <Link to="/experiments" className="brand" aria-label="Abacus home">
          Abacus
        </Link>
        <nav aria-label="main">
          <Link to="/experiments" activeProps={{ className: 'active', 'aria-current': 'page' }}>
            Experiments
          </Link>
          <Link to="/features" activeProps={{ className: 'active', 'aria-current': 'page' }}>
            Features
          </Link>
          <Link to="/data" activeProps={{ className: 'active', 'aria-current': 'page' }}>
            Data
          </Link>
          <Link to="/models" activeProps={{ className: 'active', 'aria-current': 'page' }}>
            Models
          </Link>
          <Link to="/serving" activeProps={{ className: 'active', 'aria-current': 'page' }}>
            Serving
          </Link>
          <Link to="/reports" activeProps={{ className: 'active', 'aria-current': 'page' }}>
            Reports
          </Link>
          <a href="/api/docs">API docs</a>
        </nav>
        <div className="who">
          {me.data ? (
            <span>
              <span className="who-name">{me.data.name}</span>{' '}
              <span className="muted">
                ({me.data.role}; {me.data.lines.includes('*') ? 'all lines' : `lines: ${me.data.lines.join(', ')}`})
              </span>
            </span>
          ) : null}
          <button type="button" className="secondary" onClick={() => auth.signOut()}>
            Sign out
          </button>
        </div>
      </header>
      <main id="main" tabIndex={-1}>
        <Outlet />
      </main>
    </>
  );
}

function NotFound() {
  return (
    <main id="main" className="signin">
      <h1>Page not found</h1>
      <p>
        Nothing lives at this address. Go to the <Link to="/experiments">experiments</Link> or the <Link to="/data">data</Link>{' '}
        page.
      </p>
    </main>
  );
}
